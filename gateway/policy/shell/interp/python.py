"""Python programs, parsed with `ast`: the processes, shell strings and files they reach.

Every reference to a module or function that starts programs, touches files or reaches code
by name is checked where it stands: called directly with arguments this analysis can read,
it becomes a command, a script, a read or a write; anywhere else (assigned, passed, looked up
with getattr, reached through a frame or a dunder) the program is unparseable.
"""

from __future__ import annotations

import ast

from gateway.policy.shell.interp import python_tables as t
from gateway.policy.shell.interp.effects import CodeEffects
from gateway.policy.shell.interp.python_calls import Calls
from gateway.policy.shell.interp.python_names import (
    ARG,
    CALL,
    KEYWORD,
    STORE,
    SUBSCRIPT,
    UNPACK,
    Program,
    Ref,
    collect,
)


def analyse_python(source: str, python2: bool = False) -> CodeEffects:
    program = collect(source)
    if program.problem:
        return CodeEffects(unparseable=program.problem)
    calls = Calls(program, cap=max(4 * len(source), 4096))
    _Checks(program, calls, python2).run()
    return calls.effects()


_ENVIRON_READERS = frozenset({"builtins.dict", "copy.copy", "copy.deepcopy", "builtins.print",
                              "builtins.len", "builtins.sorted", "builtins.list", "json.dumps"})
_DANGEROUS_ATTRS = frozenset({
    *t.PROCESS_NAMES, *t.PATH_METHODS, *(name.rpartition(".")[2] for name in t.KNOWN),
}) - {"get", "Path", "open", "copy", "run", "call", "input", "file", "help"}


class _Checks:
    def __init__(self, program: Program, calls: Calls, python2: bool) -> None:
        self.p = program
        self.calls = calls
        self.reflective = t.REFLECTIVE_NAMES | t.PY2_ONLY_REFLECTIVE if python2 else (
            t.REFLECTIVE_NAMES - t.PY2_ONLY_REFLECTIVE)
        self.verdicts: dict[tuple[str, int], str] = {}

    def fail(self, why: str) -> None:
        self.calls.fail(why)

    def run(self) -> None:
        for module in self.p.imported:
            if _in_modules(module, t.REFLECTIVE_MODULES):
                self.fail(f"imports {module}")
        for ref in self.p.refs:
            self.reference(ref)
        for node in self.p.calls:
            self.call(node)
        self.calls.environment_stores()
        if self.calls.values.relied:
            self.relied()

    # -- references ----------------------------------------------------------------------
    def reference(self, ref: Ref) -> None:
        node, role = ref.node, ref.role
        if type(node) is ast.Name and node.id in t.BAD_NAMES:
            self.fail(f"uses {node.id}")
            return
        step: ast.expr = node
        while type(step) is ast.Attribute:
            attr = step.attr
            if attr in t.FRAME_ATTRS or (_dunder(attr) and attr not in t.SAFE_DUNDERS):
                self.fail(f"uses the attribute {attr}")
                return
            step = step.value
        qualified = self.p.qualify(node)
        if qualified is None:
            return
        if qualified in t.ENVIRON and role not in (STORE, CALL):
            self.environ_value(ref)
            return
        key = (qualified, role)
        if key not in self.verdicts:
            self.verdicts[key] = self.verdict(qualified, role)
        if self.verdicts[key]:
            self.fail(self.verdicts[key])

    def verdict(self, qualified: str, role: int) -> str:
        """Why a reference to `qualified` in this role is unparseable, or ''."""
        if role == STORE:
            if qualified in t.KNOWN or _in_modules(qualified, t.SENSITIVE_MODULES | t.ENVIRON):
                return f"assigns to {qualified}"
            return ""
        if qualified in self.reflective or _in_modules(qualified, t.REFLECTIVE_MODULES):
            return f"uses {qualified}"
        prefix = _known_prefix(qualified)
        if prefix is not None:
            return f"uses an attribute of {prefix}: {qualified}"
        if role == CALL:
            return ""
        if qualified.startswith(("os.environ.", "os.environb.")):
            return f"{qualified} used as a value"
        if qualified in t.SENSITIVE_MODULES or (qualified in t.KNOWN
                                                and qualified not in t.PATH_TYPES):
            return f"{qualified} used as a value, not called"
        if qualified.rpartition(".")[2] in t.PROCESS_NAMES and qualified not in t.NOT_PROCESSES:
            return f"{qualified} used as a value"
        return ""

    def environ_value(self, ref: Ref) -> None:
        if ref.role in (SUBSCRIPT, UNPACK, KEYWORD):
            return
        if (ref.role == ARG and isinstance(ref.parent, ast.Call)
                and self.p.qualify(ref.parent.func) in _ENVIRON_READERS):
            return
        self.fail("os.environ used as a value")

    # -- calls -----------------------------------------------------------------------------
    def call(self, node: ast.Call) -> None:
        func = node.func
        qualified = self.p.qualify(func) if type(func) in (ast.Name, ast.Attribute) else None
        if qualified is None:
            if type(func) is ast.Attribute:
                self.calls.method(func.attr, func.value, node)
            return
        if qualified in t.CODE_BUILTINS:
            self.code(qualified, node)
        elif qualified in t.ATTR_BUILTINS:
            self.attribute_lookup(qualified, node)
        else:
            self.calls.qualified(qualified, node)

    def code(self, qualified: str, node: ast.Call) -> None:
        nested = self.p.nested.get(id(node))
        if isinstance(nested, str):
            self.fail(f"{qualified}: {nested}")
        elif nested is None:
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str | bytes):
                self.fail(f"{qualified} called through another name")
            else:
                self.fail(f"{qualified} of code computed at run time")

    def attribute_lookup(self, qualified: str, node: ast.Call) -> None:
        if len(node.args) < 2:
            return
        name = self.calls.values.value(node.args[1])
        text = "".join(p for p in name if p is not None) if None not in name else None
        if text is None:
            self.fail(f"{qualified} with an attribute name computed at run time")
        elif text in _DANGEROUS_ATTRS or text in t.FRAME_ATTRS or (
                _dunder(text) and text not in t.SAFE_DUNDERS):
            self.fail(f"{qualified}(..., {text!r})")

    def relied(self) -> None:
        """An argv or env read from `cmd = [...]` holds only if nothing else touches cmd."""
        roots: dict[str, list[Ref]] = {}
        for ref in self.p.refs:
            root = _root(ref.node)
            if root is not None:
                roots.setdefault(root, []).append(ref)
        for name, calls in self.calls.values.relied.items():
            for ref in roots.get(name, []):
                direct = type(ref.node) is ast.Name and ref.role in (ARG, KEYWORD)
                if not (direct and id(ref.parent) in calls):
                    self.fail(f"the list or dict {name} is changed or passed elsewhere")
                    return


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _in_modules(qualified: str, modules: frozenset[str]) -> bool:
    parts = qualified.split(".")
    return any(".".join(parts[:i]) in modules for i in range(1, len(parts) + 1))


def _known_prefix(qualified: str) -> str | None:
    """os.system.__call__ and subprocess.run.__wrapped__ are the function used as a value."""
    parts = qualified.split(".")
    for i in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in t.KNOWN and prefix not in t.ENVIRON and prefix not in t.PATH_TYPES:
            return prefix
    return None


def _root(node: ast.expr) -> str | None:
    while type(node) is ast.Attribute:
        node = node.value
    return node.id if type(node) is ast.Name else None
