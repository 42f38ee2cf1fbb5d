"""Ruby programs (`ruby -e`), parsed with tree-sitter-ruby.

Ruby reaches processes through Kernel (`system`, `exec`, `spawn`, backticks, `%x`, `open("|...")`)
and a few classes (IO, Open3, PTY, Process); files through File, Dir, FileUtils, IO and
Pathname; the network through Net::HTTP, URI.open, sockets and HTTP gems. A call of one of
these with arguments this analysis can read becomes a script, a command, a read or a write.
Calls by a computed name (`send` of a computed symbol, `method`, `const_get`, `eval` of a
string, `instance_eval "..."`), a sensitive class or module used as a value
(`f = File`), sensitive methods passed as symbols (`&:system`), and aliases of them make the
program unparseable. String literals and comments are never actions.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from gateway.policy.shell.interp import collect as c
from gateway.policy.shell.interp import ruby_tables as t
from gateway.policy.shell.interp.collect import Options
from gateway.policy.shell.interp.effects import CodeEffects
from gateway.policy.shell.interp.treewalk import TreeAnalysis, field, is_field, named_children, text
from gateway.policy.shell.interp.values import UNKNOWN, Value, concat, static

_BINDINGS = frozenset({
    "method_parameters", "block_parameters", "lambda_parameters", "optional_parameter",
    "splat_parameter", "hash_splat_parameter", "keyword_parameter", "block_parameter",
    "destructured_parameter", "exception_variable", "left_assignment_list", "rest_assignment",
    "destructured_left_assignment", "array_pattern", "hash_pattern", "find_pattern",
    "alternative_pattern", "keyword_pattern", "as_pattern", "in_clause", "match_pattern",
    "test_pattern", "operator_assignment", "for",
})
"""Where an identifier is bound rather than read (besides `x = value`)."""
_SINGLE = re.compile(r"\\([\\'])")
_CAPTURE = re.compile(r"\(\?<([A-Za-z_]\w*)>")
_ESCAPE = re.compile(r"\\(?:([ntsrabefv0\\\"#'])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|"
                     r"u\{([0-9A-Fa-f ]+)\}|u([0-9A-Fa-f]{4})|(\n))")
_SIMPLE = {"n": "\n", "t": "\t", "s": " ", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b",
           "f": "\f", "v": "\v", "0": "\0", "\\": "\\", '"': '"', "#": "#", "'": "'"}
_STRINGS = frozenset({"string", "chained_string", "simple_symbol", "delimited_symbol",
                      "bare_string", "character", "binary", "identifier",
                      "parenthesized_statements"})
_URL = re.compile(r"(https?|ftp)://", re.I)


def analyse_ruby(source: str) -> CodeEffects:
    return _Ruby(source).analyse()


class _Ruby(TreeAnalysis):
    language = "ruby"

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.included: set[str] = set()
        self.binds = {"assignment": self.assignment, "identifier": self.binding,
                      "binary": self.captures, "call": self.include}
        self.checks = {"call": self.call, "subshell": self.subshell, "constant": self.constant,
                       "heredoc_beginning": self.heredoc,
                       "block_argument": self.block_argument, "alias": self.alias,
                       "assignment": self.env_assignment, "simple_symbol": self.symbol}

    # -- bindings ----------------------------------------------------------------------------
    def assignment(self, node: Node) -> None:
        left, right = field(node, "left"), field(node, "right")
        if left is not None and left.type == "identifier":
            self.bound(text(left), right)

    def binding(self, node: Node) -> None:
        parent = self.parent(node)
        if parent is None:
            return
        kind = parent.type
        if kind == "for":
            if is_field(parent, "pattern", node):
                self.bound(text(node))
        elif kind == "optional_parameter":
            if is_field(parent, "name", node):
                self.bound(text(node))
        elif kind == "operator_assignment":
            if is_field(parent, "left", node):
                self.bound(text(node))
        elif kind in _BINDINGS:
            self.bound(text(node))

    def captures(self, node: Node) -> None:
        """`/(?<name>...)/ =~ s` assigns the local variable name."""
        left = field(node, "left")
        if left is not None and left.type == "regex":
            for name in _CAPTURE.findall(text(left)):
                self.bound(name)

    def include(self, node: Node) -> None:
        method = field(node, "method")
        if method is None or field(node, "receiver") is not None or text(method) not in (
                "include", "extend", "prepend"):
            return
        for arg in self.args(node) or []:
            self.included.add(_constant_name(arg) or "?")

    # -- calls -------------------------------------------------------------------------------
    def args(self, node: Node) -> list[Node] | None:
        """Positional arguments, trailing `key: value` pairs and a block argument included."""
        args = field(node, "arguments")
        if args is None:
            return []
        return [a for a in named_children(args)]

    def call(self, node: Node) -> None:
        method_node = field(node, "method")
        receiver = field(node, "receiver")
        if method_node is None:
            if receiver is not None and self.receiver(receiver) != "object":
                self.fail("calls a class or module as a function")  # File.()
            return
        method = text(method_node)
        args = self.args(node) or []
        if method_node.type == "operator" and method == "`":
            method = "`"
        where = self.receiver(receiver)
        if method in ("send", "__send__", "public_send"):
            name = static(self.value(args[0])) if args else None
            if name is None:
                self.fail(f"{method} of a method named at run time")
                return
            method, args = name, args[1:]
            if method in ("send", "__send__", "public_send"):
                self.fail(f"{method} through send")
                return
            if method in t.KERNEL and where not in t.CLASSES:  # send reaches private Kernel
                where = ""
        if method == "reopen" and args:
            self.reopen(where, args)
            return
        self.dispatch(node, where, method, args)

    def reopen(self, where: str, args: list[Node]) -> None:
        """`$stdout.reopen("f")` opens f; reopening stdin changes what started programs read."""
        if where == "STDIN":
            self.out.plumbing = "reopens its stdin"
        if args[0].type in _STRINGS:
            mode = static(self.value(args[1])) if len(args) > 1 else None
            self.out.opened(self.value(args[0]), mode)

    def receiver(self, node: Node | None) -> str:
        """'' for self (no receiver, `self`), a constant's name, 'pathname', or 'object'."""
        if node is None or node.type == "self":
            return ""
        name = _constant_name(node)
        if name is not None:
            return name.removeprefix("::")
        if node.type == "call":
            method = field(node, "method")
            inner = field(node, "receiver")
            if method is not None and text(method) == "Pathname" and inner is None:
                return "pathname"
            if method is not None and text(method) == "new" and inner is not None and (
                    _constant_name(inner) == "Pathname"):
                return "pathname"
            if method is not None and text(method) == "URI" and inner is None:
                return "uri"
            if method is not None and text(method) == "parse" and inner is not None and (
                    _constant_name(inner) == "URI"):
                return "uri"
        if node.type in ("global_variable",) and text(node) in ("$stdin", "$<"):
            return "STDIN"
        return "object"

    def dispatch(self, node: Node, where: str, method: str, args: list[Node]) -> None:
        if where in ("", "Kernel", "Object", "BasicObject"):
            op = t.KERNEL.get(method)
            if op is None and where == "":
                if "?" in self.included:
                    self.fail("includes a module named at run time")
                    return
                for name in ("FileUtils", "Open3"):
                    if name in self.included and op is None:
                        op = t.CLASSES[name].get(method)
            if op is not None:
                self.apply(node, method, op, args)
            return
        if where == "STDIN":
            return
        if where == "pathname":
            self.pathname(node, method, args)
            return
        if where == "uri":
            if method in ("open", "read", "get"):
                self.out.network(self.uri_of(node), "URI.open")
            return
        if where == "URI":
            if method == "open" and args:
                self.kernel_open(args, "URI.open")
            return
        if where == "ENV":
            if method in ("store", "update", "merge!", "replace", "clear"):
                self.out.env_changed("changes the environment at run time")
            return
        if where in t.FAIL_CONSTANTS:
            self.fail(f"uses {where}: it {t.FAIL_CONSTANTS[where]}")
            return
        if where in t.NETWORK_CONSTANTS or where.startswith("Net::"):
            self.out.network(self.address(args), f"{where}.{method}")
            return
        table = t.CLASSES.get(where)
        if table is not None:
            op = table.get(method)
            if op is None and where not in t.LENIENT:
                self.fail(f"uses {where}.{method}, which this analysis does not model")
            elif op is not None:
                self.apply(node, f"{where}.{method}", op, args)
            return
        if where == "object" or where in t.HARMLESS_CONSTANTS:
            if method in t.ANY_RECEIVER:
                op = "fail:starts a process" if method == "popen" else t.KERNEL.get(
                    method, f"fail:calls .{method}")
                self.apply(node, method, op if method not in ("require", "load") else
                           f"fail:calls .{method}", args)
            return
        self.generic(where, method, args)

    def apply(self, node: Node, what: str, op: t.Op, args: list[Node]) -> None:
        if isinstance(op, c.FileOp):
            self.file_op(op, args)
            return
        if op == "harmless":
            return
        if op.startswith("fail:"):
            self.fail(f"{what}: it {op[5:]}")
        elif op in ("spawn", "popen", "capture"):
            self.spawn(what, op, args)
        elif op == "backtick":
            if args:
                self.out.script(self.value(args[0]), what)
        elif op == "kopen":
            self.kernel_open(args, what)
        elif op == "eval":
            if args and field(node, "block") is None:
                self.fail(f"{what} of a string")
        elif op == "trap":
            command = args[1] if len(args) > 1 else None
            if command is not None and command.type in _STRINGS and static(self.value(
                    command)) not in ("IGNORE", "SIG_IGN", "DEFAULT", "SIG_DFL", "EXIT",
                                      "SYSTEM_DEFAULT", ""):
                self.fail("trap with a command in a string")
        elif op == "require":
            name = static(self.value(args[0])) if args else None
            if name is None:
                self.fail("requires a library named at run time")
            elif name in ("fiddle", "ffi", "dl", "pty", "irb", "drb", "drb/drb"):
                self.fail(f"requires {name}")
        elif op == "require_relative":
            self.out.read(self.value(args[0]) if args else UNKNOWN)
        elif op == "open":
            self.open(args)
        elif op == "ioread" or op == "iowrite":
            self.io_path(op, what, args)
        elif op == "chdir":
            self.out.chdir = True
        else:
            self.fail(f"calls {what}")

    def paths(self, args: list[Node]) -> list[Value]:
        """Argument values, arrays of paths spread (FileUtils.rm_rf %w[a b])."""
        values: list[Value] = []
        for arg in args:
            if arg.type in ("pair", "block_argument"):
                continue
            listed = self.array(arg)
            values.extend(listed if listed is not None else [self.value(arg)])
        return values

    def file_op(self, op: c.FileOp, args: list[Node]) -> None:
        if op.paths == (-1,):
            values = self.paths(args)
        else:
            positional = [a for a in args if a.type not in ("pair", "block_argument")]
            values = [self.value(a) for a in positional[: max(op.paths) + 1]]
            if len(values) <= max(op.paths):
                return
            if op.paths[0] > 0:  # chmod(mode, *paths): the paths from there on
                extra = self.paths(positional[op.paths[0]:])
                for path in extra:
                    self.out.file_op(c.FileOp(op.command, (0,), op.reads, op.writes), [path])
                return
        if values:
            self.out.file_op(op, values)

    def open(self, args: list[Node]) -> None:
        positional = [a for a in args if a.type not in ("pair", "block_argument")]
        if not positional:
            return
        mode: str | None = "r"
        if len(positional) > 1:
            given = positional[1]
            mode = static(self.value(given)) if given.type in _STRINGS else None
        elif any(a.type == "pair" for a in args):
            mode = None
        self.out.opened(self.value(positional[0]), mode)

    def io_path(self, op: str, what: str, args: list[Node]) -> None:
        if not args:
            return
        path = self.value(args[0])
        first = path[0] if path else ""
        if first is None:
            self.fail(f"{what} of a path computed at run time may run a command")
        elif first.lstrip().startswith("|"):
            fed = self.value(args[1]) if op == "iowrite" and len(args) > 1 else None
            self.out.script(concat((first.lstrip()[1:],), path[1:]), what, Options(stdin=fed))
        elif op == "ioread":
            self.out.read(path)
        else:
            self.out.write(path)

    def kernel_open(self, args: list[Node], what: str) -> None:
        if not args:
            return
        path = self.value(args[0])
        first = path[0] if path else ""
        if first is None:
            self.fail(f"{what} of a name computed at run time may run a command")
        elif first.lstrip().startswith("|"):
            self.out.script(concat((first.lstrip()[1:],), path[1:]), what)
        elif _URL.match(first):
            self.out.network(path, what)
        else:
            self.open(args)

    def spawn(self, what: str, op: str, args: list[Node]) -> None:
        options = Options(stdin=UNKNOWN if op == "popen" else None)
        positional: list[Node] = []
        for arg in args:
            if arg.type == "pair":
                if not self.spawn_option(arg, options, what):
                    return
            elif arg.type == "block_argument":
                continue
            else:
                positional.append(arg)
        if positional and positional[0].type == "hash":
            if not self.spawn_env(positional[0], options, what):
                return
            positional = positional[1:]
        if positional and positional[-1].type == "hash":
            for pair in named_children(positional[-1]):
                if pair.type != "pair" or not self.spawn_option(pair, options, what):
                    if pair.type != "pair":
                        self.fail(f"{what} with options computed at run time")
                    return
            positional = positional[:-1]
        if not positional:
            return
        if any(a.type in ("splat_argument", "hash_splat_argument") for a in positional):
            self.fail(f"{what} with arguments unpacked at run time")
            return
        if op == "popen" and what.endswith("popen"):
            mode = positional[1] if len(positional) > 1 else None
            text_mode = static(self.value(mode)) if mode is not None else "r"
            if text_mode is not None and "w" not in text_mode and "+" not in text_mode:
                options.stdin = None
            positional = positional[:1]
        first = positional[0]
        listed = self.array(first)
        if listed is not None:  # [program, argv0] or (popen) the whole argv
            if what.endswith("popen"):
                self.out.command(listed, what, options)
            else:
                self.out.command([listed[0] if listed else UNKNOWN,
                                  *self.values(positional[1:])], what, options)
            return
        if len(positional) == 1:
            self.out.script(self.value(first), what, options)
        else:
            self.out.command(self.values(positional), what, options)

    def spawn_option(self, pair: Node, options: Options, what: str) -> bool:
        key = field(pair, "key")
        value = field(pair, "value")
        name = text(key).strip(":").rstrip(":") if key is not None else ""
        if key is None or value is None:
            self.fail(f"{what} with options computed at run time")
            return False
        if name in t.SPAWN_OPTIONS_IGNORED:
            return True
        if name == "chdir":
            options.cwd = self.value(value)
        elif name == "stdin_data":
            options.stdin = self.value(value)
        elif name in ("in", "0"):
            self.fail(f"{what} gives the command another stdin")
            return False
        elif value.type in ("string", "chained_string"):
            self.out.write(self.value(value))  # out: "file", err: "file"
        elif value.type in ("array",):
            items = named_children(value)
            if items and items[0].type in ("string", "chained_string"):
                self.out.write(self.value(items[0]))
        return True

    def spawn_env(self, node: Node, options: Options, what: str) -> bool:
        for pair in named_children(node):
            key = field(pair, "key") if pair.type == "pair" else None
            value = field(pair, "value") if pair.type == "pair" else None
            name = static(self.value(key)) if key is not None else None
            if name is None or value is None:
                self.fail(f"{what} with an environment computed at run time")
                return False
            options.env.append((name, self.value(value)))
        return True

    def pathname(self, node: Node, method: str, args: list[Node]) -> None:
        op = t.PATHNAME.get(method)
        receiver = field(node, "receiver")
        inner = self.args(receiver) if receiver is not None else []
        path = self.value(inner[0]) if inner else UNKNOWN
        if op is None:
            self.fail(f"uses Pathname#{method}, which this analysis does not model")
        elif isinstance(op, c.FileOp):
            self.out.file_op(op, [path, *self.values(args[:1])])
        elif op == "open":
            mode = static(self.value(args[0])) if args else "r"
            self.out.opened(path, mode)

    def uri_of(self, node: Node) -> Value:
        receiver = field(node, "receiver")
        inner = self.args(receiver) if receiver is not None else []
        return self.value(inner[0]) if inner else UNKNOWN

    def address(self, args: list[Node]) -> Value:
        for arg in args:
            if arg.type in ("string", "chained_string"):
                return self.value(arg)
            if arg.type == "call":
                method = field(arg, "method")
                if method is not None and text(method) == "URI":
                    inner = self.args(arg) or []
                    return self.value(inner[0]) if inner else UNKNOWN
            break
        return UNKNOWN

    def generic(self, where: str, method: str, args: list[Node]) -> None:
        """A class this analysis does not know: `X.open("path", "w")` acts on that path."""
        positional = [a for a in args if a.type not in ("pair", "block_argument")]
        if not positional or positional[0].type not in ("string", "chained_string"):
            return
        path = self.value(positional[0])
        mode = static(self.value(positional[1])) if len(positional) > 1 and positional[
            1].type in ("string",) else None
        if method in ("open", "new"):
            self.out.opened(path, mode)
        elif method in t.GENERIC_READS:
            self.out.read(path)
        elif method in t.GENERIC_WRITES:
            self.out.write(path)

    # -- other checks ------------------------------------------------------------------------
    def subshell(self, node: Node) -> None:
        self.out.script(self.interpolated(node.named_children, 0), "backticks")

    def heredoc(self, node: Node) -> None:
        if "`" in text(node):
            self.fail("runs a command in a heredoc (<<`CMD`)")

    def constant(self, node: Node) -> None:
        """A sensitive class or module must be the receiver of a call it can read."""
        parent = self.parent(node)
        if parent is None:
            return
        entity: Node = node
        if parent.type == "scope_resolution":
            if is_field(parent, "name", node):
                return  # judged with its scope: Net::HTTP
            entity = parent
            outer = self.parent(entity)
            while outer is not None and outer.type == "scope_resolution" and is_field(
                    outer, "scope", entity):
                entity, outer = outer, self.parent(outer)
        name = (_constant_name(entity) or text(node)).removeprefix("::")
        if name in t.FAIL_CONSTANTS:
            self.fail(f"uses {name}: it {t.FAIL_CONSTANTS[name]}")
            return
        if not _sensitive_constant(name):
            return
        holder = self.parent(entity)
        if holder is None:
            return
        if holder.type == "call" and is_field(holder, "receiver", entity):
            return
        if holder.type == "call" and is_field(holder, "method", entity):
            return  # Pathname("x"), URI("x")
        if holder.type == "argument_list" and self.include_argument(holder):
            return
        if holder.type in ("class", "module") and is_field(holder, "name", entity):
            return
        if holder.type in ("element_reference",) and name == "ENV" and is_field(
                holder, "object", entity):
            return
        if holder.type == "defined" or (name in ("STDIN",) and holder.type == "call"):
            return
        self.fail(f"uses {name} as a value")

    def include_argument(self, args: Node) -> bool:
        call = self.parent(args)
        method = field(call, "method") if call is not None and call.type == "call" else None
        return method is not None and text(method) in ("include", "extend", "prepend", "require")

    def block_argument(self, node: Node) -> None:
        inner = named_children(node)
        if inner and inner[0].type == "simple_symbol" and text(inner[0])[1:] in (
                t.SENSITIVE_SYMBOLS):
            self.fail(f"passes {text(inner[0])} as a block")

    def symbol(self, node: Node) -> None:
        parent = self.parent(node)
        if parent is not None and parent.type == "call" and is_field(parent, "receiver", node):
            method = field(parent, "method")
            if method is not None and text(method) == "to_proc" and text(node)[1:] in (
                    t.SENSITIVE_SYMBOLS):
                self.fail(f"makes a proc of {text(node)}")

    def alias(self, node: Node) -> None:
        names = [text(n).lstrip(":") for n in node.named_children]
        if any(n in t.SENSITIVE_SYMBOLS or n in t.KERNEL for n in names):
            self.fail(f"aliases {' '.join(names)}")

    def env_assignment(self, node: Node) -> None:
        left = field(node, "left")
        right = field(node, "right")
        if left is None or left.type != "element_reference":
            if left is not None and left.type == "global_variable" and text(left) in (
                    "$stdin", "$<"):
                self.out.plumbing = "replaces its stdin"
            return
        target = field(left, "object")
        if target is None or _constant_name(target) not in ("ENV", "::ENV"):
            return
        keys = [k for k in named_children(left) if k.id != target.id]
        name = self.value(keys[0]) if len(keys) == 1 else UNKNOWN
        self.out.setenv(name, self.value(right) if right is not None else UNKNOWN)

    # -- values ------------------------------------------------------------------------------
    def array(self, node: Node) -> list[Value] | None:
        if node.type == "string_array":
            return [self.value(e) for e in named_children(node)]
        if node.type != "array":
            return None
        return [UNKNOWN if e.type == "splat_argument" else self.value(e)
                for e in named_children(node)]

    def fold(self, node: Node, depth: int) -> Value:
        kind = node.type
        if kind == "string":
            opener = text(node.children[0]) if node.children else '"'
            if opener.startswith("'") or opener.startswith("%q"):
                return (_SINGLE.sub(r"\1", "".join(text(ch) for ch in node.named_children)),)
            return self.interpolated(node.named_children, depth)
        if kind in ("bare_string", "delimited_symbol"):
            return self.interpolated(node.named_children, depth)
        if kind == "chained_string":
            return concat(*(self.value(ch, depth) for ch in node.named_children))
        if kind == "simple_symbol":
            return (text(node)[1:],)
        if kind == "character":
            return (text(node)[1:],)
        if kind == "integer" and text(node).isdigit():
            return (text(node),)
        if kind == "binary":
            operator = field(node, "operator")
            left, right = field(node, "left"), field(node, "right")
            if operator is not None and text(operator) == "+" and left is not None and (
                    right is not None):
                return concat(self.value(left, depth), self.value(right, depth))
            return UNKNOWN
        if kind == "parenthesized_statements" and node.named_child_count == 1:
            return self.value(node.named_children[0], depth)
        if kind == "identifier":
            return self.name_value(text(node), depth)
        return UNKNOWN

    def interpolated(self, parts: list[Node], depth: int) -> Value:
        values: list[Value] = []
        for part in parts:
            if part.type == "string_content":
                values.append((text(part),))
            elif part.type == "escape_sequence":
                values.append((_ESCAPE.sub(_unescape, text(part)),))
            elif part.type == "interpolation" and part.named_child_count == 1:
                values.append(self.value(part.named_children[0], depth))
            else:
                values.append(UNKNOWN)
        return concat(*values)


def _constant_name(node: Node) -> str | None:
    if node.type == "constant":
        return text(node)
    if node.type == "scope_resolution":
        scope, name = field(node, "scope"), field(node, "name")
        if name is None:
            return None
        if scope is None:
            return "::" + text(name)
        inner = _constant_name(scope)
        return f"{inner.removeprefix('::')}::{text(name)}" if inner is not None else None
    return None


def _sensitive_constant(name: str) -> bool:
    return (name in t.CLASSES or name in t.FAIL_CONSTANTS or name in t.NETWORK_CONSTANTS
            or name.startswith("Net::") or name in ("Pathname", "ENV", "URI", "STDIN"))


def _unescape(match: re.Match[str]) -> str:
    simple, octal, hexa, braces, four, newline = match.groups()
    if simple is not None:
        return _SIMPLE[simple]
    if octal is not None:
        return chr(int(octal, 8) & 0xFF)
    if hexa is not None:
        return chr(int(hexa, 16))
    if braces is not None:
        return "".join(chr(int(h, 16)) for h in braces.split() if int(h, 16) < 0x110000)
    if four is not None:
        return chr(int(four, 16))
    return "" if newline is not None else match.group(0)
