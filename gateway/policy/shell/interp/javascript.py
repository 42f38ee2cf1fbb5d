"""JavaScript programs (node, deno, bun), parsed with tree-sitter-javascript.

Processes, files and the network are reached through modules (`require("child_process")`,
`import fs from "node:fs"`, `process.getBuiltinModule`) and a few globals (`process`, `Deno`,
`Bun`, `fetch`). Each reference to one of them, through every alias the program makes
(`const cp = require(...)`, `const {execSync: x} = ...`, `import * as fs`), must stand where
its effect can be read: a member with a static name (`fs.rmSync`, `fs["rmSync"]`) called
directly, a binding to a plain name, a destructuring. A module or such a function anywhere
else (passed, stored, returned, indexed by a computed key) makes the program unparseable, and
so do eval, Function, `.constructor`, `with`, calls of computed members and modules named at
run time. String literals and comments are never actions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tree_sitter import Node

from gateway.policy.shell.interp import collect as c
from gateway.policy.shell.interp import javascript_tables as t
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

_PARENS = frozenset({"parenthesized_expression"})
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
_STRINGS = frozenset({"string", "template_string", "binary_expression"})
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


def analyse_javascript(source: str) -> CodeEffects:
    return _Js(source).analyse()


class _Js(TreeAnalysis):
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
        self.checks = {"identifier": self.identifier, "shorthand_property_identifier":
                       self.identifier, "member_expression": self.member,
                       "subscript_expression": self.subscript, "call_expression": self.call,
                       "new_expression": self.new, "with_statement": self.with_statement,
                       "import_statement": self.import_statement}

    # -- bindings ----------------------------------------------------------------------------
    def declarator(self, node: Node) -> None:
        name, value = field(node, "name"), field(node, "value")
        if name is None:
            return
        if name.type == "identifier":
            self.bound(_name(name), value)
            if value is not None and _computed_member(value):
                self.computed.add(_name(name))
        if value is not None:
            self.candidates.append((name, value))

    def assignment(self, node: Node) -> None:
        left, right = field(node, "left"), field(node, "right")
        if left is None or right is None:
            return
        if left.type == "identifier":
            self.bound(_name(left), right)
            if _computed_member(right):
                self.computed.add(_name(left))
        self.candidates.append((left, right))

    def binding(self, node: Node) -> None:
        parent = self.parent(node)
        if parent is None:
            return
        kind = parent.type
        if kind in ("variable_declarator", "assignment_expression") and is_field(
                parent, "left" if kind == "assignment_expression" else "name", node):
            return  # counted with its value
        if _binds(parent, node):
            self.bound(_name(node))

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
            self.aliases.setdefault(_name(target), ref)
        elif target.type == "object_pattern":
            for item in named_children(target):
                if item.type == "shorthand_property_identifier_pattern":
                    member = self.member_ref(ref, _name(item))
                    if member is not None:
                        self.aliases.setdefault(_name(item), member)
                elif item.type == "pair_pattern":
                    key, value = field(item, "key"), field(item, "value")
                    prop = self.key_name(key) if key is not None else None
                    if prop is not None and value is not None and value.type == "identifier":
                        member = self.member_ref(ref, prop)
                        if member is not None:
                            self.aliases.setdefault(_name(value), member)

    def import_aliases(self, node: Node) -> None:
        source = field(node, "source")
        module = static(self.value(source)) if source is not None else None
        ref = self.module_ref(module) if module is not None else None
        clause = next((ch for ch in node.named_children if ch.type == "import_clause"), None)
        if ref is None or clause is None:
            return
        for item in clause.named_children:
            if item.type == "identifier":
                self.aliases.setdefault(_name(item), ref)
            elif item.type == "namespace_import":
                for local in item.named_children:
                    self.aliases.setdefault(_name(local), ref)
            elif item.type == "named_imports":
                for spec in item.named_children:
                    name, alias = field(spec, "name"), field(spec, "alias")
                    if name is None:
                        continue
                    member = self.member_ref(ref, static(self.value(name)) or _name(name))
                    if member is not None:
                        self.aliases.setdefault(_name(alias or name), member)

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
            name = _name(node)
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
            return _name(prop) if prop is not None else None
        index = field(node, "index")
        return static(self.value(index)) if index is not None else None

    def key_name(self, key: Node) -> str | None:
        if key.type in ("property_identifier", "identifier"):
            return _name(key)
        if key.type in ("string", "number"):
            return static(self.value(key))
        return None

    # -- references --------------------------------------------------------------------------
    def identifier(self, node: Node) -> None:
        name = _name(node)
        ref = self.aliases.get(name) or self.global_ref(name)
        if ref is None:
            return
        parent = self.parent(node)
        if parent is None or (node.type == "identifier" and _binds(parent, node)):
            return
        self.use(node, ref)

    def use(self, node: Node, ref: Ref) -> None:
        """Where a module, a function of one or a sensitive global stands must say what it
        does; anywhere else it is used as a value and the program is unparseable."""
        if ref.kind == "fail":
            self.fail(ref.name)
            return
        parent, child = self.up(node, _PARENS)
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
                self.destructured(ref, _name(item))
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
        parent, child = self.up(node, _PARENS)
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

    # -- calls -------------------------------------------------------------------------------
    def arguments(self, node: Node) -> list[Node] | None:
        args = field(node, "arguments")
        if args is None:
            return []
        if args.type == "template_string":
            return [args]
        found = named_children(args)
        return None if any(a.type == "spread_element" for a in found) else found

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
        bound = self.assigned(_name(node))
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
        return self.value(first) if first.type in _STRINGS or first.type == "identifier" else (
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
        parent, child = self.up(node, _PARENS)
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
                rest[0].type == "identifier" and _name(rest[0]) == "undefined"):
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
        parent, _ = self.up(call, _PARENS | {"await_expression"})
        return parent is not None and parent.type == "expression_statement"

    def spawn_options(self, node: Node | None, member: str) -> _Spawn | None:
        spawn = _Spawn(Options())
        if node is None or node.type in ("undefined", "null"):
            return spawn
        if node.type != "object":
            self.fail(f"{member} with options computed at run time")
            return None
        for item in named_children(node):
            if not self.option(item, spawn, member):
                return None
        return spawn

    def option(self, item: Node, spawn: _Spawn, member: str) -> bool:
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

    # -- other checks ------------------------------------------------------------------------
    def member(self, node: Node) -> None:
        prop = field(node, "property")
        name = _name(prop) if prop is not None else ""
        self.property_check(node, name)

    def subscript(self, node: Node) -> None:
        name = self.property(node)
        if name is not None:
            self.property_check(node, name)

    def property_check(self, node: Node, name: str) -> None:
        why = t.DANGEROUS_PROPERTIES.get(name)
        if why is None:
            return
        obj = field(node, "object")
        if obj is not None and self.ref_of(obj) is not None:
            return  # a module or global: its table decides
        self.fail(f"reads .{name}: it {why}")

    def call(self, node: Node) -> None:
        function = field(node, "function")
        if function is None:
            return
        callee, _ = _unwrap(function)
        if function.type == "import":
            args = self.arguments(node)
            module = static(self.value(args[0])) if args else None
            if module is None:
                self.fail("imports a module named at run time")
            elif (ref := self.module_ref(module)) is not None:
                self.use(node, ref)
            return
        self.callee_check(callee)

    def new(self, node: Node) -> None:
        constructor = field(node, "constructor")
        if constructor is not None:
            self.callee_check(_unwrap(constructor)[0])

    def callee_check(self, callee: Node) -> None:
        if callee.type == "subscript_expression" and self.property(callee) is None:
            self.fail("calls a member picked by a key computed at run time")
        elif callee.type == "member_expression" and _name(field(callee, "property") or callee) in (
                "call", "apply", "bind"):
            obj = field(callee, "object")
            if obj is not None and _unwrap(obj)[0].type == "subscript_expression" and (
                    self.property(_unwrap(obj)[0]) is None):
                self.fail("calls a member picked by a key computed at run time")
        elif callee.type == "identifier" and _name(callee) in self.computed:
            self.fail(f"calls {_name(callee)}, a member picked by a key computed at run time")

    def with_statement(self, node: Node) -> None:
        self.fail("uses with, which changes what names mean")

    def import_statement(self, node: Node) -> None:
        source = field(node, "source")
        module = static(self.value(source)) if source is not None else None
        if module is None:
            return
        ref = self.module_ref(module)
        if ref is not None and ref.kind == "fail":
            self.fail(ref.name)
        elif module.startswith(("./", "../", "/")):
            self.out.read((module,))

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
            operator = field(node, "operator")
            left, right = field(node, "left"), field(node, "right")
            if operator is not None and text(operator) == "+" and left is not None and (
                    right is not None):
                return concat(self.value(left, depth), self.value(right, depth))
            return UNKNOWN
        if kind == "parenthesized_expression" and node.named_child_count == 1:
            return self.value(node.named_children[0], depth)
        if kind == "identifier":
            return self.name_value(_name(node), depth)
        return UNKNOWN


@dataclass
class _Spawn:
    options: Options
    shell: bool = False
    stdio: str = ""
    """What the child's stdin is: inherit, ignore, pipe ('' when not said: a pipe)."""




def _name(node: Node) -> str:
    raw = text(node)
    if "\\" not in raw:
        return raw
    return _ID_ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), raw)


def _unwrap(node: Node) -> tuple[Node, int]:
    depth = 0
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
        depth += 1
    return node, depth


def _binds(parent: Node, node: Node) -> bool:
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
    node, _ = _unwrap(node)
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
