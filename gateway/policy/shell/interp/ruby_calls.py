"""The calls a Ruby program makes, by receiver and method: Kernel, IO, Open3, PTY and Process
start programs (with their options, stdin and environment); File, Dir, FileUtils, IO and
Pathname read and write files; Net::HTTP, URI.open and sockets reach the network. A call
this analysis can read becomes a script, a command, a read or a write; others make the
program unparseable."""

from __future__ import annotations

import re

from tree_sitter import Node

from gateway.policy.shell.interp import collect as c
from gateway.policy.shell.interp import ruby_tables as t
from gateway.policy.shell.interp.collect import Options
from gateway.policy.shell.interp.ruby_names import STRINGS, RubyNames, constant_name
from gateway.policy.shell.interp.treewalk import field, named_children, text
from gateway.policy.shell.interp.values import UNKNOWN, Value, concat, static

_URL = re.compile(r"(https?|ftp)://", re.I)


class RubyCalls(RubyNames):
    """What each call of a sensitive receiver's method does."""

    # -- calls -------------------------------------------------------------------------------
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
        if args[0].type in STRINGS:
            mode = static(self.value(args[1])) if len(args) > 1 else None
            self.out.opened(self.value(args[0]), mode)

    def receiver(self, node: Node | None) -> str:
        """'' for self (no receiver, `self`), a constant's name, 'pathname', or 'object'."""
        if node is None or node.type == "self":
            return ""
        name = constant_name(node)
        if name is not None:
            return name.removeprefix("::")
        if node.type == "call":
            method = field(node, "method")
            inner = field(node, "receiver")
            if method is not None and text(method) == "Pathname" and inner is None:
                return "pathname"
            if method is not None and text(method) == "new" and inner is not None and (
                    constant_name(inner) == "Pathname"):
                return "pathname"
            if method is not None and text(method) == "URI" and inner is None:
                return "uri"
            if method is not None and text(method) == "parse" and inner is not None and (
                    constant_name(inner) == "URI"):
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
            if command is not None and command.type in STRINGS and static(self.value(
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
            mode = static(self.value(given)) if given.type in STRINGS else None
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
