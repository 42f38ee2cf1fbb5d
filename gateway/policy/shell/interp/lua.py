"""Lua programs, parsed with tree-sitter-lua.

Everything Lua can do to processes and files goes through a few globals: `os` and `io` (and
`require` of native modules); `load`, `loadstring`, `dofile`, `debug`, `package`, `_G` and
`_ENV` reach code or globals by a computed name. Each reference to one of these names must
stand where its effect can be read: `os.execute("...")` called with a static argument,
`io.open(path, mode)`, `os["remove"](...)` with a static key. Anywhere else (`local o = os`,
`os[k]`, `f(os.remove)`) the program is unparseable.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from gateway.policy.shell.interp import collect as c
from gateway.policy.shell.interp.collect import Options
from gateway.policy.shell.interp.effects import CodeEffects
from gateway.policy.shell.interp.treewalk import (
    TreeAnalysis,
    field,
    is_field,
    named_children,
    text,
)
from gateway.policy.shell.interp.values import UNKNOWN, Value, concat, static

_HARMLESS = "harmless"
_OS: dict[str, object] = {
    "execute": "script", "remove": c.RM, "rename": c.MV, "tmpname": _HARMLESS,
    "getenv": _HARMLESS, "time": _HARMLESS, "clock": _HARMLESS, "date": _HARMLESS,
    "difftime": _HARMLESS, "exit": _HARMLESS, "setlocale": _HARMLESS,
}
_IO: dict[str, object] = {
    "popen": "popen", "open": "open", "lines": "lines", "input": "input", "output": c.WRITE,
    "read": _HARMLESS, "write": _HARMLESS, "close": _HARMLESS, "flush": _HARMLESS,
    "type": _HARMLESS, "tmpfile": _HARMLESS,
}
_IO_VALUES = frozenset({"stdout", "stderr", "stdin"})
_GLOBALS = {"os": _OS, "io": _IO}
_CODE = frozenset({"load", "loadstring", "loadfile", "dofile", "debug", "package", "_G", "_ENV",
                   "getfenv", "setfenv", "rawget", "rawset", "module", "newproxy"})
_NATIVE_MODULES = frozenset({"os", "io", "debug", "package", "ffi", "jit", "lfs", "posix",
                             "luv", "uv", "nixio", "syscall", "subprocess", "luaposix"})
_NETWORK_MODULES = frozenset({"socket", "ssl", "http", "mime", "ltn12", "resty", "copas",
                              "curl", "cURL", "lcurl", "requests"})
_PARENS = frozenset({"parenthesized_expression"})
_ESCAPE = re.compile(
    r"\\(?:([abfnrtv\\\"'\n])|(\d{1,3})|x([0-9A-Fa-f]{2})|z\s*|u\{([0-9A-Fa-f]+)\})")
_SIMPLE = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
           "\\": "\\", '"': '"', "'": "'", "\n": "\n"}


def analyse_lua(source: str) -> CodeEffects:
    return _Lua(source).analyse()


class _Lua(TreeAnalysis):
    language = "lua"

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.binds = {"assignment_statement": self.assignment, "parameters": self.parameters,
                      "for_generic_clause": self.loop, "for_numeric_clause": self.loop,
                      "function_declaration": self.function}
        self.checks = {"identifier": self.identifier}

    # -- bindings ----------------------------------------------------------------------------
    def assignment(self, node: Node) -> None:
        names = node.named_children[0] if node.named_children else None
        values = node.named_children[1] if len(node.named_children) > 1 else None
        if names is None or names.type != "variable_list":
            return
        targets = [n for n in names.named_children if n.type != "attribute"]
        given = named_children(values) if values is not None else []
        for index, target in enumerate(targets):
            if target.type == "identifier":
                plain = index < len(given) and len(targets) == len(given)
                self.bound(text(target), given[index] if plain else None)

    def parameters(self, node: Node) -> None:
        for name in node.named_children:
            if name.type == "identifier":
                self.bound(text(name))

    def loop(self, node: Node) -> None:
        for child in node.named_children:
            names = child.named_children if child.type == "variable_list" else [child]
            for name in names:
                if name.type == "identifier" and (child.type == "variable_list"
                                                  or is_field(node, "name", name)):
                    self.bound(text(name))

    def function(self, node: Node) -> None:
        name = field(node, "name")
        if name is not None and name.type == "identifier":
            self.bound(text(name))

    # -- references --------------------------------------------------------------------------
    def identifier(self, node: Node) -> None:
        name = text(node)
        if name not in _GLOBALS and name not in _CODE and name != "require":
            return
        parent = self.parent(node)
        if parent is None or not _is_reference(parent, node):
            return
        if name in _CODE:
            self.fail(f"uses {name}")
        elif name == "require":
            self.require(node)
        else:
            self.library(name, node)

    def library(self, name: str, node: Node) -> None:
        parent, child = self.up(node, _PARENS)
        member = self.member(parent, child)
        if member is None or parent is None:
            self.fail(f"uses {name} as a value")
            return
        table = _GLOBALS[name]
        if name == "io" and member in _IO_VALUES:
            return
        op = table.get(member)
        if op is None:
            self.fail(f"uses {name}.{member}, which this analysis does not model")
            return
        call, callee = self.up(parent, _PARENS)
        if call is None or call.type != "function_call" or not is_field(call, "name", callee):
            self.fail(f"uses {name}.{member} as a value")
            return
        if op != _HARMLESS:
            self.call(f"{name}.{member}", op, call)

    def member(self, parent: Node | None, child: Node) -> str | None:
        """The static name in `os.name` or `os["name"]`, or None (after failing) when not one."""
        if parent is None or not is_field(parent, "table", child):
            return None
        key = field(parent, "field")
        if key is None:
            return None
        if parent.type == "dot_index_expression":
            return text(key)
        if parent.type == "bracket_index_expression":
            found = static(self.value(key))
            if found is None:
                self.fail("indexes a library table with a key computed at run time")
            return found
        return None  # os:method() passes the table itself

    def call(self, what: str, op: object, call: Node) -> None:
        args = self.arguments(call)
        values = self.values(args)
        if isinstance(op, c.FileOp):
            if values:
                self.out.file_op(op, values)
        elif op == "script":
            if values:
                self.out.script(values[0], what)
        elif op == "popen":
            mode = static(values[1]) if len(values) > 1 else "r"
            writes = mode is None or "w" in mode
            if values:
                self.out.script(values[0], what, Options(stdin=UNKNOWN if writes else None))
        elif op == "open":
            mode = static(values[1]) if len(values) > 1 else "r"
            if values:
                self.out.opened(values[0], mode)
        elif op in ("lines", "input") and args and args[0].type != "nil":
            self.out.read(values[0])

    def require(self, node: Node) -> None:
        call, callee = self.up(node, _PARENS)
        if call is None or call.type != "function_call" or not is_field(call, "name", callee):
            self.fail("uses require as a value")
            return
        args = self.arguments(call)
        module = static(self.value(args[0])) if len(args) == 1 else None
        if module is None:
            self.fail("requires a module named at run time")
            return
        root = module.split(".")[0]
        if root in _NATIVE_MODULES:
            self.fail(f"requires {module}, which reaches processes, files or native code")
        elif root in _NETWORK_MODULES:
            self.out.network(UNKNOWN, f"require {module}")

    def arguments(self, call: Node) -> list[Node]:
        args = field(call, "arguments")
        return named_children(args) if args is not None else []

    # -- values ------------------------------------------------------------------------------
    def fold(self, node: Node, depth: int) -> Value:
        kind = node.type
        if kind == "string":
            return (_string(node),)
        if kind == "number" and text(node).isdigit():
            return (text(node),)
        if kind == "parenthesized_expression" and node.named_child_count == 1:
            return self.value(node.named_children[0], depth)
        if kind == "binary_expression":
            operator = node.child_by_field_name("operator")
            left, right = field(node, "left"), field(node, "right")
            op_text = text(operator) if operator is not None else _operator(node)
            if op_text == ".." and left is not None and right is not None:
                return concat(self.value(left, depth), self.value(right, depth))
            return UNKNOWN
        if kind == "identifier":
            return self.name_value(text(node), depth)
        return UNKNOWN


def _operator(node: Node) -> str:
    for child in node.children:
        if not child.is_named:
            return child.type
    return ""


def _is_reference(parent: Node, node: Node) -> bool:
    """Not a field name (t.os, t:os(), {os = 1}), a label, or an attribute."""
    kind = parent.type
    if kind in ("dot_index_expression", "method_index_expression"):
        return is_field(parent, "table", node)
    if kind == "field":
        return not is_field(parent, "name", node) or any(ch.type == "[" for ch in parent.children)
    return kind not in ("goto_statement", "label_statement", "attribute")


def _string(node: Node) -> str:
    content = field(node, "content")
    body = text(content) if content is not None else ""
    start = node.children[0].type if node.children else '"'
    if start.startswith("["):
        return body[1:] if body.startswith("\n") else body  # a long string: no escapes
    return _ESCAPE.sub(_unescape, body)


def _unescape(match: re.Match[str]) -> str:
    simple, decimal, hexa, codepoint = match.groups()
    if simple is not None:
        return _SIMPLE[simple]
    if decimal is not None:
        return chr(min(int(decimal), 255))
    if hexa is not None:
        return chr(int(hexa, 16))
    if codepoint is not None:
        value = int(codepoint, 16)
        return chr(value) if value < 0x110000 else "\ufffd"
    return ""  # \z skips the whitespace that follows
