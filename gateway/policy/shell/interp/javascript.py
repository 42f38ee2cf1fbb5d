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

The names (javascript_names.py) and what references do where they stand (javascript_calls.py)
sit below the checks each node kind gets, here.
"""

from __future__ import annotations

from tree_sitter import Node

from gateway.policy.shell.interp import javascript_tables as t
from gateway.policy.shell.interp.effects import CodeEffects
from gateway.policy.shell.interp.javascript_calls import JsCalls
from gateway.policy.shell.interp.javascript_names import js_name, unwrap_parens
from gateway.policy.shell.interp.treewalk import field
from gateway.policy.shell.interp.values import static


def analyse_javascript(source: str) -> CodeEffects:
    return _Js(source).analyse()


class _Js(JsCalls):
    """A JavaScript program's analysis: its references, calls and the properties, callees and
    statements that make it unparseable."""

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.checks = {"identifier": self.identifier, "shorthand_property_identifier":
                       self.identifier, "member_expression": self.member,
                       "subscript_expression": self.subscript, "call_expression": self.call,
                       "new_expression": self.new, "with_statement": self.with_statement,
                       "import_statement": self.import_statement}

    # -- other checks ------------------------------------------------------------------------
    def member(self, node: Node) -> None:
        prop = field(node, "property")
        name = js_name(prop) if prop is not None else ""
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
        callee, _ = unwrap_parens(function)
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
            self.callee_check(unwrap_parens(constructor)[0])

    def callee_check(self, callee: Node) -> None:
        if callee.type == "subscript_expression" and self.property(callee) is None:
            self.fail("calls a member picked by a key computed at run time")
        elif callee.type == "member_expression" and js_name(
                field(callee, "property") or callee) in ("call", "apply", "bind"):
            obj = field(callee, "object")
            if obj is not None and unwrap_parens(obj)[0].type == "subscript_expression" and (
                    self.property(unwrap_parens(obj)[0]) is None):
                self.fail("calls a member picked by a key computed at run time")
        elif callee.type == "identifier" and js_name(callee) in self.computed:
            self.fail(f"calls {js_name(callee)}, a member picked by a key computed at run time")

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
