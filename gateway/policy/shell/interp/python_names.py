"""One pass over a Python tree: imports, name bindings, calls and references with their roles.

Name resolution is flow-insensitive on purpose: a name bound by an import anywhere is that
module everywhere, and a name is a known constant only when the whole program binds it once.
Code given literally to exec/eval/compile is parsed here too and shares these tables, since
it runs in the same namespace (`exec("import os as o"); o.system(...)`).
"""

from __future__ import annotations

import ast
import gc
from collections import Counter
from dataclasses import dataclass, field

from gateway.policy.shell.interp import python_tables as t

VALUE, CALL, BASE, SUBSCRIPT, UNPACK, STORE, ARG, KEYWORD = range(8)
"""Roles of an expression in its parent: BASE is the object of an attribute (os in os.x)."""

MAX_NESTING = 4
_CODE_NAMES = frozenset({"exec", "eval", "compile"})


def parse_python(source: str | bytes) -> ast.Module | str:
    """The tree, or why the text does not parse (never raises)."""
    enabled = gc.isenabled()
    gc.disable()  # building a large tree triggers many collections for nothing
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        return f"not valid Python: {exc.msg} (line {exc.lineno})"
    except (ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return f"Python code too deeply nested or malformed to analyse: {type(exc).__name__}"
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class Ref:
    node: ast.expr
    """A Name, or the outermost Attribute of a chain (os.path.join)."""
    role: int
    parent: ast.AST | None = None
    """The Call for ARG and KEYWORD roles; the Subscript for SUBSCRIPT."""


@dataclass
class Program:
    aliases: dict[str, str] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)
    bindings: Counter[str] = field(default_factory=Counter)
    candidates: dict[str, ast.expr] = field(default_factory=dict)
    calls: list[ast.Call] = field(default_factory=list)
    refs: list[Ref] = field(default_factory=list)
    imported: list[str] = field(default_factory=list)
    env_stores: list[tuple[ast.Subscript, ast.expr | None]] = field(default_factory=list)
    nested: dict[int, ast.Module | str] = field(default_factory=dict)
    qualified: dict[int, str | None] = field(default_factory=dict)
    """id(expression) -> its qualified name, once computed."""
    trees: list[ast.Module] = field(default_factory=list)
    """Kept alive while the ids above are in use."""
    """id(call) -> the tree of the literal code it runs, or why that does not parse."""
    problem: str = ""

    def assigned(self, name: str) -> ast.expr | None:
        """The value of a name the whole program binds exactly once, by `name = value`."""
        if self.bindings[name] != 1:
            return None
        return self.candidates.get(name)

    def resolve_name(self, name: str) -> str | None:
        if name in self.aliases:
            return self.aliases[name]
        for module in self.stars:
            candidate = f"{module}.{name}"
            if candidate in t.KNOWN or name in t.MODULE_ATTRS or name in t.PROCESS_NAMES:
                return candidate
        if name in t.BUILTIN_NAMES:
            return f"builtins.{name}"
        return None

    def qualify(self, node: ast.expr) -> str | None:
        """os.path.join -> 'os.path.join' through imports; None when the root is unknown and
        no attribute on the way names a module (x.os.system is os.system)."""
        key = id(node)
        if key in self.qualified:
            return self.qualified[key]
        result = self.qualified[key] = self._qualify(node)
        return result

    def _qualify(self, node: ast.expr) -> str | None:
        parts: list[str] = []
        while type(node) is ast.Attribute:
            parts.append(node.attr)
            node = node.value
        root = self.resolve_name(node.id) if type(node) is ast.Name else None
        parts.reverse()
        for i in range(len(parts) - 1, -1, -1):
            module = t.MODULE_ATTRS.get(parts[i])
            if module is not None:
                return ".".join([module, *parts[i + 1:]])
        if root is None:
            return None
        return ".".join([root, *parts]) if parts else root


def canon(module: str) -> str:
    head, _, tail = module.partition(".")
    head = t.MODULE_CANON.get(head, head)
    return f"{head}.{tail}" if tail else head


def collect(source: str) -> Program:
    """Parse `source` and every literal it passes to exec/eval/compile, into one Program."""
    program = Program()
    first = parse_python(source)
    if isinstance(first, str):
        program.problem = first
        return program
    queue: list[tuple[ast.Module, int]] = [(first, 0)]
    while queue:
        tree, depth = queue.pop()
        program.trees.append(tree)
        _walk(tree, depth, program, queue)
    return program


def _literal_code(call: ast.Call) -> str | bytes | None:
    if not call.args:
        return None
    node = call.args[0]
    if type(node) is ast.Constant and isinstance(node.value, str | bytes):
        return node.value
    return None


_SKIPPED_FIELDS = frozenset({"ctx", "op", "ops", "type_comment", "kind"})
_FIELDS: dict[type, tuple[str, ...]] = {}
_BINDERS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.FunctionDef,
            ast.AsyncFunctionDef, ast.ClassDef, ast.arg, ast.ExceptHandler, ast.MatchAs,
            ast.MatchStar, ast.MatchMapping, ast.Global, ast.Nonlocal)


def _fields(kind: type) -> tuple[str, ...]:
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(
            f for f in getattr(kind, "_fields", ()) if f not in _SKIPPED_FIELDS)
    return fields


def _walk(tree: ast.Module, depth: int, program: Program,
          queue: list[tuple[ast.Module, int]]) -> None:
    """Iterative (trees can be deeper than the recursion limit); Names and constants are
    handled where their parent is, since they are most of the nodes."""
    refs, bindings = program.refs, program.bindings
    plain: list[ast.AST] = [tree]
    roled: list[tuple[ast.AST, int, ast.AST | None]] = []
    name_type, constant_type, attribute_type = ast.Name, ast.Constant, ast.Attribute
    while plain or roled:
        if plain:
            node: ast.AST = plain.pop()
            role, parent = VALUE, None
        else:
            node, role, parent = roled.pop()
        kind = type(node)
        if kind is name_type:
            if type(node.ctx) is ast.Load:  # type: ignore[attr-defined]
                if role != BASE:
                    refs.append(Ref(node, role, parent))  # type: ignore[arg-type]
            else:
                bindings[node.id] += 1  # type: ignore[attr-defined]
        elif kind is attribute_type:
            if type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
                refs.append(Ref(node, STORE))  # type: ignore[arg-type]
            elif role != BASE:
                refs.append(Ref(node, role, parent))  # type: ignore[arg-type]
            roled.append((node.value, BASE, None))  # type: ignore[attr-defined]
        elif kind is ast.Call:
            _call(node, depth, program, queue, roled)  # type: ignore[arg-type]
        elif kind is ast.Subscript:
            roled.append((node.value, SUBSCRIPT, node))  # type: ignore[attr-defined]
            plain.append(node.slice)  # type: ignore[attr-defined]
        elif kind is ast.Dict:
            for key, value in zip(node.keys, node.values, strict=True):  # type: ignore[attr-defined]
                if key is None:
                    roled.append((value, UNPACK, None))
                else:
                    plain.append(key)
                    plain.append(value)
        elif kind is ast.Import or kind is ast.ImportFrom:
            _import(node, program)  # type: ignore[arg-type]
        else:
            if isinstance(node, _BINDERS):
                _bindings(node, program)
            for field_name in _fields(kind):
                value = getattr(node, field_name, None)
                if type(value) is list:
                    for item in value:
                        kind_item = type(item)
                        if kind_item is name_type and type(item.ctx) is ast.Load:
                            refs.append(Ref(item, VALUE))
                        elif kind_item is not constant_type and isinstance(item, ast.AST):
                            plain.append(item)
                elif value is not None and type(value) is not constant_type and isinstance(
                        value, ast.AST):
                    plain.append(value)


def _call(node: ast.Call, depth: int, program: Program, queue: list[tuple[ast.Module, int]],
          stack: list[tuple[ast.AST, int, ast.AST | None]]) -> None:
    program.calls.append(node)
    stack.append((node.func, CALL, node))
    stack.extend([(arg, ARG, node) for arg in node.args if type(arg) is not ast.Constant])
    stack.extend([(k.value, UNPACK if k.arg is None else KEYWORD, node) for k in node.keywords
                  if type(k.value) is not ast.Constant])
    func = node.func
    if type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id == "builtins":
        name = func.attr
    else:
        name = func.id if type(func) is ast.Name else ""
    if name not in _CODE_NAMES:
        return
    code = _literal_code(node)
    if code is None:
        return
    if depth >= MAX_NESTING:
        program.nested[id(node)] = "exec of literal code nested too deeply"
        return
    nested = parse_python(code)
    program.nested[id(node)] = nested
    if not isinstance(nested, str):
        queue.append((nested, depth + 1))


def _import(node: ast.Import | ast.ImportFrom, program: Program) -> None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            module = canon(alias.name)
            program.imported.append(module)
            if alias.asname:
                program.aliases[alias.asname] = module
                program.bindings[alias.asname] += 1
            else:
                top = alias.name.partition(".")[0]
                program.aliases[top] = canon(top)
                program.bindings[top] += 1
        return
    if node.level or not node.module:
        for alias in node.names:  # relative imports load files next to the code
            program.bindings[alias.asname or alias.name] += 1
        return
    module = canon(node.module)
    program.imported.append(module)
    for alias in node.names:
        if alias.name == "*":
            program.stars.append(module)
            continue
        local = alias.asname or alias.name
        program.aliases[local] = canon(f"{module}.{alias.name}")
        program.bindings[local] += 1


def _bindings(node: ast.AST, program: Program) -> None:
    """Names bound other than by a Name in a store context."""
    bind = program.bindings
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if type(target) is ast.Name:
                program.candidates[target.id] = node.value
            elif type(target) is ast.Subscript:
                program.env_stores.append((target, node.value))
    elif isinstance(node, ast.AnnAssign):
        if type(node.target) is ast.Name and node.value is not None:
            program.candidates[node.target.id] = node.value
    elif isinstance(node, ast.AugAssign | ast.For | ast.AsyncFor):
        if type(node.target) is ast.Subscript:
            program.env_stores.append((node.target, None))
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        bind[node.name] += 1
    elif isinstance(node, ast.arg):
        bind[node.arg] += 1
    elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
        if node.name:
            bind[node.name] += 1
    elif isinstance(node, ast.MatchMapping):
        if node.rest:
            bind[node.rest] += 1
    elif isinstance(node, ast.Global | ast.Nonlocal):
        for name in node.names:
            bind[name] += 1
