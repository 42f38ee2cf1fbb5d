"""PHP programs (`php -r`, -B, -R, -E), parsed with tree-sitter-php (its PHP-only grammar).

PHP reaches processes and files through named functions (case-insensitive, `\\system` and
`use function system as s` resolve to the same), backticks, a few classes and stream
wrappers. A call of a function named in the tables (php_tables) with arguments this analysis
can read becomes a script, a command, a read or a write; a function called by a computed name
(`$f()`, `("sys"."tem")()`, `$o->$m()`, `new $c`), a callback that is not a closure or the
name of a harmless function, variable variables and reflection make the program unparseable.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from gateway.policy.shell.interp import collect as c
from gateway.policy.shell.interp import php_tables as t
from gateway.policy.shell.interp.collect import Options
from gateway.policy.shell.interp.effects import CodeEffects
from gateway.policy.shell.interp.treewalk import TreeAnalysis, field, is_field, named_children, text
from gateway.policy.shell.interp.values import UNKNOWN, Value, concat, static

_CALLS = ("function_call_expression", "member_call_expression",
          "nullsafe_member_call_expression", "scoped_call_expression",
          "object_creation_expression")
_INCLUDES = ("include_expression", "include_once_expression", "require_expression",
             "require_once_expression")
_READS = frozenset({
    "binary_expression", "echo_statement", "sequence_expression", "print_intrinsic",
    "encapsed_string", "heredoc_body", "shell_command_expression", "return_statement",
    "parenthesized_expression", "conditional_expression", "unary_op_expression",
    "cast_expression", "expression_statement", "member_access_expression",
    "member_call_expression", "nullsafe_member_call_expression",
    "nullsafe_member_access_expression", "match_expression", "match_condition_list",
    "switch_statement", "while_statement", "if_statement", "isset_intrinsic", "empty_intrinsic",
    "array_element_initializer", "pair", "exit_statement", "include_expression",
    "require_expression", "include_once_expression", "require_once_expression",
    "class_constant_access_expression", "scoped_property_access_expression",
})
"""Where a variable is only read; anywhere else (assigned, passed by reference, a loop or
list target, a parameter) it counts as bound, and a value is known only when bound once."""
_SENSITIVE = frozenset({*t.SCRIPTS, *t.FAIL, "popen", "pcntl_exec", "proc_open", "putenv",
                        "unlink", "rmdir", "rename", "copy", "file_put_contents", "symlink",
                        "link", "chmod", "chown", "touch", "mkdir", "fopen", "include",
                        "require", "chdir", "curl_exec", "fsockopen"})
"""Names that must not be passed around as callbacks (`array_map("unlink", ...)`)."""
_SCHEME = re.compile(r"([a-z][a-z0-9+.\-]*):(//)?", re.I)
_ESCAPE = re.compile(r"\\(?:([ntrvef\\$\"])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u\{([0-9A-Fa-f]+)\})")
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "e": "\x1b", "f": "\f", "\\": "\\",
           "$": "$", '"': '"'}


def analyse_php(source: str) -> CodeEffects:
    return _Php(source).analyse()


class _Php(TreeAnalysis):
    language = "php"

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.aliases: dict[str, str] = {}
        self.unreliable = False
        """$GLOBALS is used: any variable may be set through it."""
        self.binds = {"variable_name": self.variable, "assignment_expression": self.assignment,
                      "namespace_use_declaration": self.use}
        self.checks = {name: self.call for name in _CALLS}
        self.checks.update({name: self.include for name in _INCLUDES})
        self.checks["shell_command_expression"] = self.backticks
        self.checks["dynamic_variable_name"] = self.variable_variable

    # -- bindings ----------------------------------------------------------------------------
    def assignment(self, node: Node) -> None:
        left, right = field(node, "left"), field(node, "right")
        if left is not None and left.type == "variable_name":
            by_ref = any(ch.type == "&" for ch in node.children)
            self.bound(_var(left), None if by_ref else right)

    def variable(self, node: Node) -> None:
        name = _var(node)
        if name == "GLOBALS":
            self.unreliable = True
        parent = self.parent(node)
        if parent is None:
            return
        kind = parent.type
        if kind == "assignment_expression" and is_field(parent, "left", node):
            return  # counted by assignment()
        if kind in _READS or (kind == "subscript_expression" and node.id != _first(parent)):
            return
        if kind == "argument" and self.by_value(parent):
            return
        if kind == "assignment_expression" and is_field(parent, "right", node):
            return
        self.bound(name)

    def by_value(self, argument: Node) -> bool:
        args = self.parent(argument)
        call = self.parent(args) if args is not None else None
        if args is None or call is None or call.type != "function_call_expression":
            return False
        function = field(call, "function")
        if function is None or function.type not in ("name", "qualified_name"):
            return False
        name = self.function_name(function)
        index = next((i for i, a in enumerate(named_children(args)) if a.id == argument.id), -1)
        return name in t.BY_VALUE or index in _read_positions(name)

    def use(self, node: Node) -> None:
        """`use function system as s`: any alias a use declaration makes is taken for a
        function's (a class alias named like a function only makes this stricter)."""
        for clause in node.named_children:
            if clause.type != "namespace_use_clause":
                continue
            names = [ch for ch in clause.named_children if ch.type in ("name", "qualified_name")]
            if not names:
                continue
            aliasing = next((ch for ch in clause.named_children
                             if ch.type == "namespace_aliasing_clause"), None)  # older grammars
            alias = field(clause, "alias") or (names[1] if len(names) > 1 else None) or (
                aliasing.named_children[-1] if aliasing is not None and aliasing.named_children
                else None)
            target = text(names[0]).rsplit("\\", 1)[-1].lower()
            local = text(alias) if alias is not None else text(names[0]).rsplit("\\", 1)[-1]
            self.aliases[local.lower()] = target

    def assigned(self, name: str) -> Node | None:
        return None if self.unreliable else super().assigned(name)

    def function_name(self, node: Node) -> str:
        name = text(node).rsplit("\\", 1)[-1].lower()
        return self.aliases.get(name, name)

    # -- calls -------------------------------------------------------------------------------
    def call(self, node: Node) -> None:
        kind = node.type
        if kind == "function_call_expression":
            self.function_call(node)
        elif kind == "object_creation_expression":
            self.new(node)
        elif kind == "scoped_call_expression":
            self.static_call(node)
        else:
            self.method_call(node)

    def arguments(self, node: Node) -> list[Node] | None:
        """The argument expressions, or None when some are named or unpacked (`...$a`)."""
        args = field(node, "arguments")
        if args is None:
            args = next((ch for ch in node.named_children if ch.type == "arguments"), None)
        if args is None:
            return []
        found: list[Node] = []
        for arg in named_children(args):
            if arg.type == "variadic_placeholder":
                return None
            if arg.type != "argument":
                found.append(arg)
                continue
            inner = named_children(arg)
            if field(arg, "name") is not None or not inner or inner[-1].type in (
                    "variadic_unpacking", "by_ref"):
                return None
            found.append(inner[-1])
        return found

    def function_call(self, node: Node) -> None:
        function = field(node, "function")
        if function is None:
            return
        if function.type not in ("name", "qualified_name"):
            inner = named_children(function) if function.type == "parenthesized_expression" else []
            if len(inner) != 1 or inner[0].type not in ("anonymous_function", "arrow_function"):
                self.fail("calls a function by a computed name")
            return
        name = self.function_name(function)
        args = self.arguments(node)
        if args is None:
            if name in _SENSITIVE or name in t.FILES or name in t.OPENS or name in t.CALLBACKS:
                self.fail(f"{name} with arguments given by name, unpacked or left open")
            return
        if name in t.FAIL:
            self.fail(t.FAIL[name])
        elif name in t.SCRIPTS or name == "popen":
            self.shell(name, args)
        elif name == "pcntl_exec":
            self.pcntl_exec(args)
        elif name == "putenv":
            self.putenv(args)
        elif name in t.FILES:
            self.file_call(t.FILES[name], name, args)
        elif name in t.OPENS:
            self.open_call(name, args)
        elif name in t.NETWORK:
            self.network_call(name, args)
        elif name == "chdir":
            self.out.chdir = True
        elif name in t.CALLBACKS:
            self.callback(name, args)
        elif name not in t.BY_VALUE:
            self.named_callbacks(name, args)

    def shell(self, name: str, args: list[Node]) -> None:
        if not args:
            return
        options = Options()
        if name == "popen":
            mode = static(self.value(args[1])) if len(args) > 1 else None
            if mode is None or "w" in mode or "+" in mode:
                options.stdin = UNKNOWN
        self.out.script(self.value(args[0]), name, options)

    def pcntl_exec(self, args: list[Node]) -> None:
        if not args:
            return
        argv = [self.value(args[0])]
        if len(args) > 1:
            listed = self.array(args[1])
            argv.extend(listed if listed is not None else [UNKNOWN])
        if len(args) > 2:
            self.fail("pcntl_exec with an environment")
            return
        self.out.command(argv, "pcntl_exec")

    def putenv(self, args: list[Node]) -> None:
        setting = static(self.value(args[0])) if args else None
        if setting is None or "=" not in setting:
            self.out.env_changed("changes the environment at run time")
        else:
            key, _, value = setting.partition("=")
            self.out.setenv((key,), (value,))

    def file_call(self, spec: c.FileOp, name: str, args: list[Node]) -> None:
        if name == "mkdir" and len(args) > 2:
            spec = c.MKDIR_P
        values = []
        for arg in args[: max(spec.paths, default=0) + 1]:
            path = self.path(self.value(arg), name)
            if self.out.problem:
                return
            if path is None and len(spec.paths) == 1:
                return  # php://stdin, data:, or a URL (reported as network access)
            values.append(UNKNOWN if path is None else path)  # copy("https://...", "f")
        if values:
            self.out.file_op(spec, values)

    def open_call(self, name: str, args: list[Node]) -> None:
        at, mode_at, default = t.OPENS[name]
        if len(args) <= at or default == "list":
            return
        path = self.path(self.value(args[at]), name)
        if path is None:
            return
        if default == "dir":
            self.out.write(concat(path, ("/",), UNKNOWN))
            return
        mode = static(self.value(args[mode_at])) if mode_at is not None and len(
            args) > mode_at else (default or None)
        self.out.opened(path, mode)

    def network_call(self, name: str, args: list[Node]) -> None:
        at = t.NETWORK[name]
        if name in t.NETWORK_BY_HANDLE:
            if name == "curl_setopt" and len(args) > 2 and text(args[1]) == "CURLOPT_URL":
                self.out.network(self.value(args[2]), name)
            return
        url = self.value(args[at]) if at is not None and len(args) > at else UNKNOWN
        self.out.network(url, name)

    def path(self, value: Value, what: str) -> Value | None:
        """A path argument, after stream wrappers: None when it names no file (reported as
        network access, or php://stdin) or the program fails."""
        first = value[0] if value else ""
        if first is None:
            return value
        scheme = _SCHEME.match(first)
        if scheme is None or len(scheme.group(1)) == 1:  # C:\ is no scheme
            return value
        name = scheme.group(1).lower()
        if name in ("http", "https", "ftp", "ftps"):
            self.out.network(value, what)
            return None
        whole = static(value)
        if (whole is not None and whole.lower() in t.WRAPPERS_SAFE) or name == "data":
            return None
        if name == "file":
            return concat((first[scheme.end():],), value[1:])
        if name in ("compress.zlib", "compress.bzip2"):
            return concat((first[scheme.end():],), value[1:])
        if name == "php" and "/resource=" in first:
            return concat((first.split("/resource=", 1)[1],), value[1:])
        self.fail(f"{what} opens a {name}: stream")
        return None

    def callback(self, name: str, args: list[Node]) -> None:
        at = t.CALLBACKS[name]
        if at is None or not args:
            return
        target = args[at] if at < len(args) else None
        if target is None:
            return
        if target.type in ("anonymous_function", "arrow_function", "null"):
            return
        if target.type in ("string", "encapsed_string"):
            named = static(self.value(target))
            if named is not None and "::" not in named and not self.sensitive(named):
                return
            self.fail(f"{name} calls {named or 'a function named at run time'}")
            return
        self.fail(f"{name} with a callback computed at run time")

    def named_callbacks(self, name: str, args: list[Node]) -> None:
        """A string naming a function that runs commands or deletes files, given to a call
        this analysis does not know (it may call it): `usort($a, 'system')`."""
        for arg in args:
            if arg.type in ("string", "encapsed_string"):
                named = static(self.value(arg))
                if named is not None and self.sensitive(named):
                    self.fail(f"passes the function name {named} to {name}")
                    return

    def sensitive(self, name: str) -> bool:
        lowered = name.strip().lstrip("\\").lower()
        return lowered in _SENSITIVE or lowered in t.FILES or lowered in t.OPENS

    def method_call(self, node: Node) -> None:
        name = field(node, "name")
        if name is None or name.type != "name":
            self.fail("calls a method by a computed name")
            return
        method = text(name).lower()
        args = self.arguments(node) or []
        if method in t.CODE_METHODS:
            self.fail(f"calls ->{text(name)}()")
        elif method in t.FILE_METHODS and args:
            kind = t.FILE_METHODS[method]
            path = self.path(self.value(args[0]), f"->{text(name)}")
            if path is None:
                return
            if kind == "write":
                self.out.write(path)
            elif kind == "read":
                self.out.read(path)
            else:
                mode = static(self.value(args[1])) if len(args) > 1 else None
                self.out.opened(path, mode)
        else:
            self.named_callbacks(f"->{text(name)}", args)

    def static_call(self, node: Node) -> None:
        scope, name = field(node, "scope"), field(node, "name")
        if scope is None or scope.type not in ("name", "qualified_name", "relative_scope"):
            self.fail("calls a method of a class named at run time")
            return
        if name is None or name.type != "name":
            self.fail("calls a method by a computed name")
            return
        cls = text(scope).rsplit("\\", 1)[-1].lower()
        why = t.CLASSES_FAIL.get(cls)
        if why:
            self.fail(why)
        elif text(name).lower() in t.CODE_METHODS:
            self.fail(f"calls ::{text(name)}()")
        else:
            self.named_callbacks(f"::{text(name)}", self.arguments(node) or [])

    def new(self, node: Node) -> None:
        cls_node = next((ch for ch in node.named_children if ch.type != "arguments"), None)
        if cls_node is None or cls_node.type == "anonymous_class":
            return
        if cls_node.type not in ("name", "qualified_name"):
            self.fail("creates an object of a class named at run time")
            return
        cls = text(cls_node).rsplit("\\", 1)[-1].lower()
        args = self.arguments(node)
        why = t.CLASSES_FAIL.get(cls)
        if why is None:
            return
        if why:
            self.fail(why)
        elif args is None:
            self.fail(f"new {cls} with arguments given by name or unpacked")
        elif cls == "splfileobject" and args:
            path = self.path(self.value(args[0]), cls)
            if path is not None:
                mode = static(self.value(args[1])) if len(args) > 1 else "r"
                self.out.opened(path, mode)
        elif cls == "sqlite3" and args:
            path = self.value(args[0])
            if path != (":memory:",):
                self.out.opened(path, None)
        elif cls in ("soapclient", "mysqli"):
            self.out.network(self.value(args[0]) if args else UNKNOWN, cls)
        elif cls == "simplexmlelement" and len(args) > 2:
            self.fail("new SimpleXMLElement may read a file or URL")

    def include(self, node: Node) -> None:
        inner = named_children(node)
        if not inner:
            return
        value = self.value(inner[0])
        path = static(value)
        if path is None:
            self.fail("includes a file named at run time")
        elif _SCHEME.match(path) and len(_SCHEME.match(path).group(1)) > 1:  # type: ignore[union-attr]
            self.fail(f"includes code from a stream: {path[:40]}")
        else:
            self.out.read(value)  # its code is not analysed, like a script file

    def backticks(self, node: Node) -> None:
        self.out.script(self.interpolated(node.named_children, 0), "backticks")

    def variable_variable(self, node: Node) -> None:
        inner = node.named_children
        if len(inner) != 1 or inner[0].type != "name":
            self.fail("uses a variable variable")

    # -- values ------------------------------------------------------------------------------
    def array(self, node: Node) -> list[Value] | None:
        if node.type != "array_creation_expression":
            return None
        items: list[Value] = []
        for element in named_children(node):
            inner = named_children(element)
            if len(inner) != 1 or element.type != "array_element_initializer":
                return None
            items.append(self.value(inner[0]))
        return items

    def fold(self, node: Node, depth: int) -> Value:
        kind = node.type
        if kind == "string":
            return ("".join(text(ch) if ch.type != "escape_sequence" else text(ch)[1:]
                            for ch in node.named_children),)
        if kind == "encapsed_string":
            return self.interpolated(node.named_children, depth)
        if kind == "heredoc":
            body = field(node, "value")
            return self.interpolated(body.named_children, depth) if body is not None else ("",)
        if kind == "nowdoc":
            body = field(node, "value")
            return (text(body),) if body is not None else ("",)
        if kind == "binary_expression":
            left, right = field(node, "left"), field(node, "right")
            operator = field(node, "operator")
            if (operator is not None and text(operator) == "." and left is not None
                    and right is not None):
                return concat(self.value(left, depth), self.value(right, depth))
            return UNKNOWN
        if kind == "parenthesized_expression" and node.named_child_count == 1:
            return self.value(node.named_children[0], depth)
        if kind == "integer" and text(node).isdigit():
            return (text(node),)
        if kind == "variable_name":
            return self.name_value(_var(node), depth)
        return UNKNOWN

    def interpolated(self, parts: list[Node], depth: int) -> Value:
        values: list[Value] = []
        for part in parts:
            if part.type == "string_content":
                values.append((text(part),))
            elif part.type == "escape_sequence":
                values.append((_ESCAPE.sub(_unescape, text(part)),))
            elif part.type == "variable_name":
                values.append(self.value(part, depth))
            elif part.type != "comment":
                values.append(UNKNOWN)
        return concat(*values)


def _var(node: Node) -> str:
    return text(node).lstrip("$")


def _first(node: Node) -> int:
    children = node.named_children
    return children[0].id if children else -1


def _read_positions(name: str) -> frozenset[int]:
    if name in t.SCRIPTS or name == "popen":
        return frozenset({0, 1}) if name == "popen" else frozenset({0})
    if name in t.FILES:
        return frozenset(t.FILES[name].paths)
    if name in t.OPENS:
        at, mode, _ = t.OPENS[name]
        return frozenset({at} | ({mode} if mode is not None else set()))
    address = t.NETWORK.get(name)
    return frozenset({address}) if address is not None else frozenset()


def _unescape(match: re.Match[str]) -> str:
    simple, octal, hexa, codepoint = match.groups()
    if simple is not None:
        return _SIMPLE[simple]
    if octal is not None:
        return chr(int(octal, 8) & 0xFF)
    if hexa is not None:
        return chr(int(hexa, 16))
    value = int(codepoint, 16)
    return chr(value) if value < 0x110000 else match.group(0)
