"""Where a reference to a module, one of its functions or a sensitive global stands in a
JavaScript program, and what it does there: called (the commands it starts with their
options, stdin and environment, the files it reads and writes, the network it reaches),
bound to a name or unpacked (followed), or used as a value (unparseable)."""

from __future__ import annotations

from dataclasses import dataclass

from tree_sitter import Node

from gateway.policy.shell.interp import collect as c
from gateway.policy.shell.interp import javascript_tables as t
from gateway.policy.shell.interp.collect import Options
from gateway.policy.shell.interp.javascript_names import (
    PARENS,
    STRINGS,
    JsNames,
    Ref,
    binds_name,
    js_name,
)
from gateway.policy.shell.interp.treewalk import field, is_field, named_children, text
from gateway.policy.shell.interp.values import UNKNOWN, Value, concat, static


@dataclass
class Spawn:
    options: Options
    shell: bool = False
    stdio: str = ""
    """What the child's stdin is: inherit, ignore, pipe ('' when not said: a pipe)."""


class JsCalls(JsNames):
    """What each reference to a module, a function of one or a sensitive global does."""

    # -- references --------------------------------------------------------------------------
    def identifier(self, node: Node) -> None:
        name = js_name(node)
        ref = self.aliases.get(name) or self.global_ref(name)
        if ref is None:
            return
        parent = self.parent(node)
        if parent is None or (node.type == "identifier" and binds_name(parent, node)):
            return
        self.use(node, ref)

    def use(self, node: Node, ref: Ref) -> None:
        """Where a module, a function of one or a sensitive global stands must say what it
        does; anywhere else it is used as a value and the program is unparseable."""
        if ref.kind == "fail":
            self.fail(ref.name)
            return
        parent, child = self.up(node, PARENS)
        if parent is None:
            return
        kind = parent.type
        if kind in ("member_expression", "subscript_expression") and is_field(
                parent, "object", child):
            prop = self.property(parent)
            if prop is None:
                self.fail(f"indexes {ref.describe()} with a key computed at run time")
                return
            if ref.kind == "env":
                self.env_member(parent, prop)
                return
            member = self.member_ref(ref, prop)
            if member is not None:
                self.use(parent, member)
            return
        if kind in ("call_expression", "new_expression") and (
                is_field(parent, "function", child) or is_field(parent, "constructor", child)):
            self.called(parent, ref)
        elif kind == "variable_declarator" and is_field(parent, "value", child):
            self.bound_to(field(parent, "name"), ref)
        elif kind == "assignment_expression" and is_field(parent, "right", child):
            self.bound_to(field(parent, "left"), ref)
        elif kind == "await_expression":
            self.use(parent, ref)
        elif kind == "expression_statement" or (kind == "unary_expression" and text(
                parent.children[0]) in ("typeof", "void")):
            return
        elif ref.kind == "env":
            self.env_value(parent, child)
        else:
            self.fail(f"uses {ref.describe()} as a value")

    def bound_to(self, target: Node | None, ref: Ref) -> None:
        if target is None or target.type == "identifier":
            return
        if target.type != "object_pattern" or ref.kind in ("func", "network", "timer"):
            self.fail(f"unpacks {ref.describe()} in a way this analysis does not follow")
            return
        for item in named_children(target):
            if item.type == "shorthand_property_identifier_pattern":
                self.destructured(ref, js_name(item))
            elif item.type == "pair_pattern" and (value := field(item, "value")) is not None \
                    and value.type == "identifier" and (key := field(item, "key")) is not None \
                    and (prop := self.key_name(key)) is not None:
                self.destructured(ref, prop)
            else:
                self.fail(f"unpacks {ref.describe()} in a way this analysis does not follow")
                return

    def destructured(self, ref: Ref, prop: str) -> None:
        member = self.member_ref(ref, prop)
        if member is not None and member.kind == "fail":
            self.fail(member.name)

    def env_member(self, node: Node, prop: str) -> None:
        """process.env.NAME: read, or set for the commands the code starts."""
        parent, child = self.up(node, PARENS)
        if parent is not None and parent.type == "assignment_expression" and is_field(
                parent, "left", child):
            right = field(parent, "right")
            self.out.setenv((prop,), self.value(right) if right is not None else UNKNOWN)
        elif parent is not None and parent.type == "augmented_assignment_expression":
            self.out.env_changed("changes the environment at run time")
        elif parent is not None and parent.type == "call_expression" and prop == "set":
            args = self.arguments(parent) or []  # Deno.env.set(name, value)
            if len(args) == 2:
                self.out.setenv(self.value(args[0]), self.value(args[1]))
            else:
                self.out.env_changed("changes the environment at run time")

    def env_value(self, parent: Node, child: Node) -> None:
        kind = parent.type
        if kind in ("pair", "spread_element") or (kind == "arguments" and (
                (call := self.parent(parent)) is None
                or self.ref_of_callee(call) != "Object.assign")):
            return
        self.out.env_changed("changes the environment through process.env")

    def ref_of_callee(self, call: Node) -> str:
        function = field(call, "function")
        return text(function) if function is not None else ""

    def called(self, node: Node, ref: Ref) -> None:
        kind = ref.kind
        args = self.arguments(node)
        if kind == "require" or (kind == "func" and ref.name == "process"
                                 and ref.member == "getBuiltinModule"):
            self.require(node, args)
            return
        if kind == "timer":
            first = args[0] if args else None
            if first is not None and not self.callable(first):
                self.fail(f"{ref.name} with code that may be a string")
            return
        if kind == "network":
            self.out.network(self.address(args), ref.name)
            return
        if kind == "bunfile":
            return
        if kind != "func":
            self.fail(f"calls {ref.describe()}")
            return
        if args is None:
            self.fail(f"{ref.describe()} with arguments unpacked at run time")
            return
        self.function(node, ref, args)

    def callable(self, node: Node) -> bool:
        """A function, or a name not bound to a string: browsers, deno and bun run a string
        given to setTimeout as code."""
        if node.type in ("arrow_function", "function_expression", "function"):
            return True
        if node.type != "identifier":
            return False
        bound = self.assigned(js_name(node))
        return bound is None or bound.type in ("arrow_function", "function_expression",
                                               "function")

    def require(self, node: Node, args: list[Node] | None) -> None:
        module = static(self.value(args[0])) if args else None
        if module is None:
            self.fail("loads a module named at run time")
            return
        ref = self.module_ref(module)
        if ref is not None:
            self.use(node, ref)
        elif module.startswith(("./", "../", "/")) or module in (".", ".."):
            self.out.read((module,))  # its code is not analysed, like a script file

    def address(self, args: list[Node] | None) -> Value:
        if not args:
            return UNKNOWN
        first = args[0]
        return self.value(first) if first.type in STRINGS or first.type == "identifier" else (
            UNKNOWN)

    def function(self, node: Node, ref: Ref, args: list[Node]) -> None:
        module, member = ref.name, ref.member
        what = ref.describe()
        op: t.Op | None = "network" if module in t.NETWORK_MODULES else t.MODULES[module].get(
            member)
        if isinstance(op, c.FileOp):
            values = [self.value(a) for a in args[: max(op.paths, default=0) + 1]]
            if values:
                self.out.file_op(op, values)
        elif op in ("harmless", "value", None):
            return
        elif op.startswith("fail:"):
            self.fail(op[5:])
        elif op == "network":
            self.out.network(self.address(args), what)
        elif op == "chdir":
            self.out.chdir = True
        elif op == "open":
            mode = static(self.value(args[1])) if len(args) > 1 else "r"
            if args:
                self.out.opened(self.value(args[0]), None if mode is None else mode.strip("s"))
        elif op == "bunfile":
            self.bun_file(node, args)
        elif op in ("rm", "rmdir", "mkdir", "cp", "mkdtemp"):
            self.file_options(op, args)
        elif op in ("exec", "execFile", "spawn", "fork"):
            self.process(node, op, member, args)
        else:
            self.fail(f"calls {what}")

    def file_options(self, op: str, args: list[Node]) -> None:
        if not args:
            return
        flags = self.flags(args[2 if op == "cp" else 1] if len(args) > (2 if op == "cp" else 1)
                           else None)
        recursive = flags.get("recursive", False)
        if op == "mkdtemp":
            self.out.write(concat(self.value(args[0]), UNKNOWN))
        elif op == "mkdir":
            self.out.file_op(c.MKDIR_P if recursive is not False else c.MKDIR,
                             [self.value(args[0])])
        elif op == "cp":
            self.out.file_op(c.CP_R if recursive is not False else c.CP, self.values(args[:2]))
        elif op == "rmdir" and recursive is False:
            self.out.file_op(c.RMDIR, [self.value(args[0])])
        elif recursive is not False:
            self.out.file_op(c.RM_RF, [self.value(args[0])])
        else:
            force = flags.get("force", False)
            self.out.file_op(c.RM if force is False else c.RM_F, [self.value(args[0])])

    def flags(self, node: Node | None) -> dict[str, bool | None]:
        """Boolean options of an object literal; every flag None (unknown) when the options
        are not a literal."""
        if node is None or node.type in ("undefined", "null"):
            return {}
        if node.type != "object":
            return {"recursive": None, "force": None}
        found: dict[str, bool | None] = {}
        for item in named_children(node):
            key = field(item, "key") if item.type == "pair" else None
            prop = self.key_name(key) if key is not None else None
            value = field(item, "value")
            if prop is None or value is None:
                return {"recursive": None, "force": None}
            found[prop] = True if value.type == "true" else False if value.type == "false" else None
        return found

    def bun_file(self, node: Node, args: list[Node]) -> None:
        if not args:
            return
        path = self.value(args[0])
        parent, child = self.up(node, PARENS)
        prop = self.property(parent) if parent is not None and parent.type in (
            "member_expression", "subscript_expression") and is_field(
            parent, "object", child) else None
        if prop in ("delete", "unlink"):
            self.out.file_op(c.RM, [path])
        elif prop in ("write", "writer"):
            self.out.write(path)
        else:
            self.out.read(path)

    def process(self, node: Node, op: str, member: str, args: list[Node]) -> None:
        if not args:
            return
        argv: list[Value] = [self.value(args[0])]
        rest = args[1:]
        if op != "exec" and rest and rest[0].type in ("array", "identifier") and not (
                rest[0].type == "identifier" and js_name(rest[0]) == "undefined"):
            listed = self.array(rest[0])
            argv.extend(listed if listed is not None else [UNKNOWN])
            rest = rest[1:]
        given = next((a for a in rest if a.type not in (
            "arrow_function", "function_expression", "function")), None)
        spawn = self.spawn_options(given, member)
        if spawn is None:
            return
        options = spawn.options
        if member not in t.SYNC_SPAWNS and options.stdin is None and spawn.stdio not in (
                "inherit", "ignore") and not self.result_unused(node):
            options.stdin = UNKNOWN  # the code holds the child and may write to its stdin
        if op == "fork":
            self.out.command([("node",), *argv], member, options)
        elif op == "exec" or spawn.shell:
            words: list[Value] = []
            for index, value in enumerate(argv):
                words.extend([(" ",), value] if index else [value])
            self.out.script(concat(*words), member, options)
        else:
            self.out.command(argv, member, options)

    def result_unused(self, call: Node) -> bool:
        """The call is a statement of its own: nothing can reach the child it starts."""
        parent, _ = self.up(call, PARENS | {"await_expression"})
        return parent is not None and parent.type == "expression_statement"

    def spawn_options(self, node: Node | None, member: str) -> Spawn | None:
        spawn = Spawn(Options())
        if node is None or node.type in ("undefined", "null"):
            return spawn
        if node.type != "object":
            self.fail(f"{member} with options computed at run time")
            return None
        for item in named_children(node):
            if not self.option(item, spawn, member):
                return None
        return spawn

    def option(self, item: Node, spawn: Spawn, member: str) -> bool:
        key = field(item, "key") if item.type == "pair" else None
        value = field(item, "value")
        prop = self.key_name(key) if key is not None else None
        if prop is None or value is None or prop not in t.SPAWN_OPTIONS:
            self.fail(f"{member} with the option {prop or '(computed)'}")
            return False
        if prop == "cwd":
            spawn.options.cwd = self.value(value)
        elif prop == "input":
            spawn.options.stdin = self.value(value)
        elif prop == "env":
            return self.env_option(value, spawn.options, member)
        elif prop == "shell" and value.type != "false":
            shell = "sh" if value.type == "true" else static(self.value(value))
            if shell is None or shell.rsplit("/", 1)[-1] not in c.SHELLS:
                self.fail(f"{member} runs its command with {shell or 'a shell named at run time'}")
                return False
            spawn.shell = True
        elif prop == "stdio":
            items = named_children(value) if value.type == "array" else [value]
            first = items[0] if items else value
            if first.type not in ("string", "number", "null", "undefined"):
                self.fail(f"{member} with stdio computed at run time")
                return False
            spawn.stdio = static(self.value(first)) or text(first)
        return True

    def env_option(self, value: Node, options: Options, member: str) -> bool:
        if self.ref_of(value) in (Ref("env", "process.env"),):
            return True
        if value.type != "object":
            self.fail(f"{member} with an environment computed at run time")
            return False
        for item in named_children(value):
            if item.type == "spread_element" and item.named_child_count and self.ref_of(
                    item.named_children[0]) == Ref("env", "process.env"):
                continue
            key = field(item, "key") if item.type == "pair" else None
            prop = self.key_name(key) if key is not None else None
            given = field(item, "value")
            if prop is None or given is None:
                self.fail(f"{member} with an environment computed at run time")
                return False
            options.env.append((prop, self.value(given)))
        return True

    def array(self, node: Node) -> list[Value] | None:
        if node.type != "array":
            return None
        return [UNKNOWN if e.type == "spread_element" else self.value(e)
                for e in named_children(node)]
