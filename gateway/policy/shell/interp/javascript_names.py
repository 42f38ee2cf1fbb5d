"""What the names of a JavaScript program stand for: the module aliases it makes
(`const cp = require("child_process")`, `import * as fs`, destructurings, to a fixed point),
what an expression is (a module, one of its functions, a sensitive global, or nothing that
matters) and what it folds to as a string."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from gateway.policy.shell.interp import javascript_tables as t
from gateway.policy.shell.interp.treewalk import TreeAnalysis, field, is_field, named_children, text
from gateway.policy.shell.interp.values import UNKNOWN, Value, concat, static

PARENS = frozenset({"parenthesized_expression"})
_PATTERNS = frozenset({"object_pattern", "array_pattern", "pair_pattern", "assignment_pattern",
                       "rest_pattern", "object_assignment_pattern", "formal_parameters"})
_BINDERS = {
    "variable_declarator": "name", "arrow_function": "parameter", "function_declaration": "name",
    "function_expression": "name", "generator_function_declaration": "name",
    "generator_function": "name", "class_declaration": "name", "class": "name",
    "catch_clause": "parameter", "for_in_statement": "left", "import_specifier": "",
    "namespace_import": "", "import_clause": "", "export_specifier": "",
    "assignment_expression": "left", "augmented_assignment_expression": "left",
    "update_expression": "argument",
}
"""Where an identifier is bound rather than read (`""`: any child of that node)."""
_ID_ESCAPE = re.compile(r"\\u\{([0-9a-fA-F]+)\}|\\u([0-9a-fA-F]{4})")
_STR_ESCAPE = re.compile(r"\\(?:u\{([0-9a-fA-F]+)\}|u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|"
                         r"([0-7]{1,3})|(\r\n|\n|\r|\u2028|\u2029)|(.))", re.S)
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v"}
STRINGS = frozenset({"string", "template_string", "binary_expression"})
_URL_SCHEMES = ("http:", "https:", "data:", "file:", "blob:")


@dataclass(frozen=True)
class Ref:
    """What an expression is, when it matters: a module, one of its functions, ..."""

    kind: str
    """module, func, require, global, netmodule, env, bunfile, network, timer, fail"""
    name: str = ""
    member: str = ""

    def describe(self) -> str:
        return f"{self.name}.{self.member}" if self.member else self.name or self.kind


class JsNames(TreeAnalysis):
    """A JavaScript program's bindings and references, resolved before its checks run."""

    language = "javascript"

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.aliases: dict[str, Ref] = {}
        self.candidates: list[tuple[Node, Node]] = []
        """(pattern or name, value) of declarations and assignments, for module aliases."""
        self.imports: list[Node] = []
        self.computed: set[str] = set()
        """Names bound to a member picked by a key computed at run time (`f = o[k]`)."""
        self.binds = {"variable_declarator": self.declarator,
                      "assignment_expression": self.assignment, "identifier": self.binding,
                      "shorthand_property_identifier_pattern": self.binding,
                      "import_statement": self.imports.append}

    # -- bindings ----------------------------------------------------------------------------
    def declarator(self, node: Node) -> None:
        name, value = field(node, "name"), field(node, "value")
        if name is None:
            return
        if name.type == "identifier":
            self.bound(js_name(name), value)
            if value is not None and _computed_member(value):
                self.computed.add(js_name(name))
        if value is not None:
            self.candidates.append((name, value))

    def assignment(self, node: Node) -> None:
        left, right = field(node, "left"), field(node, "right")
        if left is None or right is None:
            return
        if left.type == "identifier":
            self.bound(js_name(left), right)
            if _computed_member(right):
                self.computed.add(js_name(left))
        self.candidates.append((left, right))

    def binding(self, node: Node) -> None:
        parent = self.parent(node)
        if parent is None:
            return
        kind = parent.type
        if kind in ("variable_declarator", "assignment_expression") and is_field(
                parent, "left" if kind == "assignment_expression" else "name", node):
            return  # counted with its value
        if binds_name(parent, node):
            self.bound(js_name(node))

    def prepare(self) -> None:
        """Module aliases, to a fixed point: `const c = require("child_process"), e = c`."""
        for statement in self.imports:
            self.import_aliases(statement)
        for _ in range(8):
            before = dict(self.aliases)
            for target, value in self.candidates:
                ref = self.ref_of(value)
                if ref is not None:
                    self.alias(target, ref)
            if self.aliases == before:
                break

    def alias(self, target: Node, ref: Ref) -> None:
        if target.type == "identifier":
            self.aliases.setdefault(js_name(target), ref)
        elif target.type == "object_pattern":
            for item in named_children(target):
                if item.type == "shorthand_property_identifier_pattern":
                    member = self.member_ref(ref, js_name(item))
                    if member is not None:
                        self.aliases.setdefault(js_name(item), member)
                elif item.type == "pair_pattern":
                    key, value = field(item, "key"), field(item, "value")
                    prop = self.key_name(key) if key is not None else None
                    if prop is not None and value is not None and value.type == "identifier":
                        member = self.member_ref(ref, prop)
                        if member is not None:
                            self.aliases.setdefault(js_name(value), member)

    def import_aliases(self, node: Node) -> None:
        source = field(node, "source")
        module = static(self.value(source)) if source is not None else None
        ref = self.module_ref(module) if module is not None else None
        clause = next((ch for ch in node.named_children if ch.type == "import_clause"), None)
        if ref is None or clause is None:
            return
        for item in clause.named_children:
            if item.type == "identifier":
                self.aliases.setdefault(js_name(item), ref)
            elif item.type == "namespace_import":
                for local in item.named_children:
                    self.aliases.setdefault(js_name(local), ref)
            elif item.type == "named_imports":
                for spec in item.named_children:
                    name, alias = field(spec, "name"), field(spec, "alias")
                    if name is None:
                        continue
                    member = self.member_ref(ref, static(self.value(name)) or js_name(name))
                    if member is not None:
                        self.aliases.setdefault(js_name(alias or name), member)

    # -- what expressions are --------------------------------------------------------------
    def module_ref(self, module: str) -> Ref | None:
        name = module.removeprefix("node:")
        if name in t.CODE_MODULES:
            return Ref("fail", f"uses {name}, which {t.CODE_MODULES[name]}")
        if name in t.MODULES:
            return Ref("module", name)
        if name in t.NETWORK_MODULES:
            return Ref("netmodule", name)
        if module.startswith(_URL_SCHEMES):
            return Ref("fail", f"loads code from {module[:40]}")
        return None

    def global_ref(self, name: str) -> Ref | None:
        entry = t.GLOBALS.get(name)
        if entry is None:
            return None
        if entry.startswith("module:"):
            return Ref("module", entry[7:])
        if entry.startswith("fail:"):
            return Ref("fail", f"uses {name}: it {entry[5:]}")
        return Ref(entry, name)

    def ref_of(self, node: Node, depth: int = 0) -> Ref | None:
        """What an expression is, read without running anything; None when harmless here."""
        if depth > 32:
            return None
        kind = node.type
        if kind in ("parenthesized_expression", "await_expression") and node.named_child_count:
            return self.ref_of(node.named_children[-1], depth + 1)
        if kind == "identifier":
            name = js_name(node)
            return self.aliases.get(name) or self.global_ref(name)
        if kind == "call_expression":
            function = field(node, "function")
            if function is None:
                return None
            loader = function.type == "import" or self.ref_of(function, depth + 1) in (
                Ref("require", "require"), Ref("func", "process", "getBuiltinModule"))
            args = self.arguments(node)
            if loader and args is not None and len(args) >= 1:
                module = static(self.value(args[0]))
                return self.module_ref(module) if module is not None else None
            return None
        if kind in ("member_expression", "subscript_expression"):
            obj = field(node, "object")
            base = self.ref_of(obj, depth + 1) if obj is not None else None
            prop = self.property(node)
            if base is None or prop is None:
                return None
            return self.member_ref(base, prop)
        return None

    def member_ref(self, ref: Ref, prop: str) -> Ref | None:
        kind = ref.kind
        if kind == "module":
            if ref.name == "process" and prop == "env":
                return Ref("env", "process.env")
            if ref.name == "Deno" and prop == "env":
                return Ref("env", "Deno.env")
            op = t.MODULES[ref.name].get(prop)
            if op is None:
                return Ref("fail", f"uses {ref.name}.{prop}, which this analysis does not model")
            if isinstance(op, str) and op.startswith("module:"):
                return Ref("module", op[7:])
            if isinstance(op, str) and op.startswith("fail:"):
                return Ref("fail", f"uses {ref.name}.{prop}: it {op[5:]}")
            if op == "value":
                return None
            return Ref("func", ref.name, prop)
        if kind == "global":
            return self.global_ref(prop)
        if kind == "netmodule":
            return None if prop in t.NETWORK_HARMLESS else Ref("func", ref.name, prop)
        if kind == "require":
            return None if prop == "resolve" else Ref("fail", f"uses require.{prop}")
        if kind == "cjsmodule":
            return None if prop in ("exports", "id", "filename", "loaded", "path") else Ref(
                "fail", f"uses module.{prop}")
        if kind == "module" or ref.kind == "fail":
            return ref
        if kind == "env":
            return None if ref.name == "process.env" or prop in ("get", "has", "toObject") else (
                Ref("env", "Deno.env", prop))
        if kind in ("func", "network", "timer", "bunfile"):
            return Ref("fail", f"uses {ref.describe()} as a value: .{prop}")
        return None

    def property(self, node: Node) -> str | None:
        """The static name of `o.name` or `o["name"]`, or None."""
        if node.type == "member_expression":
            prop = field(node, "property")
            return js_name(prop) if prop is not None else None
        index = field(node, "index")
        return static(self.value(index)) if index is not None else None

    def key_name(self, key: Node) -> str | None:
        if key.type in ("property_identifier", "identifier"):
            return js_name(key)
        if key.type in ("string", "number"):
            return static(self.value(key))
        return None

    def arguments(self, node: Node) -> list[Node] | None:
        args = field(node, "arguments")
        if args is None:
            return []
        if args.type == "template_string":
            return [args]
        found = named_children(args)
        return None if any(a.type == "spread_element" for a in found) else found
    # -- values ------------------------------------------------------------------------------
    def fold(self, node: Node, depth: int) -> Value:
        kind = node.type
        if kind == "string":
            return ("".join(_STR_ESCAPE.sub(_unescape, text(ch)) if ch.type == "escape_sequence"
                            else text(ch) for ch in node.named_children),)
        if kind == "template_string":
            parts: list[Value] = []
            for ch in node.named_children:
                if ch.type == "string_fragment":
                    parts.append((text(ch),))
                elif ch.type == "escape_sequence":
                    parts.append((_STR_ESCAPE.sub(_unescape, text(ch)),))
                elif ch.type == "template_substitution" and ch.named_child_count == 1:
                    parts.append(self.value(ch.named_children[0], depth))
                else:
                    parts.append(UNKNOWN)
            return concat(*parts)
        if kind == "binary_expression":
            return self.plus(node, depth)
        if kind == "parenthesized_expression" and node.named_child_count == 1:
            return self.value(node.named_children[0], depth)
        if kind == "identifier":
            return self.name_value(js_name(node), depth)
        return UNKNOWN


def js_name(node: Node) -> str:
    raw = text(node)
    if "\\" not in raw:
        return raw
    return _ID_ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), raw)


def unwrap_parens(node: Node) -> tuple[Node, int]:
    depth = 0
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
        depth += 1
    return node, depth


def binds_name(parent: Node, node: Node) -> bool:
    kind = parent.type
    if kind in _PATTERNS:
        return not (kind == "assignment_pattern" and is_field(parent, "right", node)) and not (
            kind == "pair_pattern" and is_field(parent, "key", node)) and not (
            kind == "object_assignment_pattern" and is_field(parent, "right", node))
    fieldname = _BINDERS.get(kind)
    if fieldname is None:
        return False
    return fieldname == "" or is_field(parent, fieldname, node)


def _computed_member(node: Node) -> bool:
    node, _ = unwrap_parens(node)
    if node.type != "subscript_expression":
        return False
    index = field(node, "index")
    return index is not None and index.type not in ("string", "number")


def _unescape(match: re.Match[str]) -> str:
    brace, four, two, octal, newline, other = match.groups()
    for digits in (brace, four, two):
        if digits is not None:
            value = int(digits, 16)
            return chr(value) if value < 0x110000 else "\ufffd"
    if octal is not None:
        return chr(int(octal, 8))
    if newline is not None:
        return ""
    return _SIMPLE.get(other, other)
