"""Static values of Python expressions: strings and paths, with the parts only known at run time.

A Value is a tuple of parts, each a str or None (unknown). Only what Python would compute
without side effects is folded: literals, `+` of strings, f-strings of literals, names bound
once to such values, os.path.join and pathlib joins. Everything else is unknown.
"""

from __future__ import annotations

import ast

from gateway.policy.shell.interp import python_tables as t
from gateway.policy.shell.interp.python_names import Program
from gateway.policy.shell.interp.values import (
    PLACEHOLDER,
    UNKNOWN,
    Part,
    Value,
    concat,
    join,
    static,
    to_bash,
    to_word,
)

MAX_DEPTH = 48

_SAME_VALUE = frozenset({
    "os.path.expanduser", "os.path.abspath", "os.path.realpath", "os.path.normpath",
    "os.fspath", "os.fsdecode", "os.fsencode", "builtins.str", "builtins.bytes",
})
_SAME_METHODS = frozenset({"expanduser", "resolve", "absolute", "as_posix", "encode", "decode"})
_JOINS = frozenset({"os.path.join"})


class Evaluator:
    def __init__(self, program: Program, cap: int) -> None:
        self.program = program
        self.cap = cap
        self.memo: dict[str, Value] = {}
        self.busy: set[str] = set()
        self.relied: dict[str, set[int]] = {}
        """Names whose list or dict literal an argv was read from -> ids of those calls."""

    def value(self, node: ast.expr, depth: int = 0) -> Value:
        if depth > MAX_DEPTH:
            return UNKNOWN
        result = self._value(node, depth + 1)
        if sum(len(p) for p in result if p is not None) > self.cap:
            return UNKNOWN
        return result

    def _value(self, node: ast.expr, depth: int) -> Value:
        if type(node) is ast.Constant:
            if isinstance(node.value, str):
                return (node.value,)
            if isinstance(node.value, bytes):
                return (node.value.decode("utf-8", "surrogateescape"),)
            return UNKNOWN
        if type(node) is ast.JoinedStr:
            return concat(*(self._formatted(v, depth) for v in node.values))
        if type(node) is ast.BinOp:
            return self._binop(node, depth)
        if type(node) is ast.Name:
            return self._name(node.id, depth)
        if type(node) is ast.Attribute:
            qualified = self.program.qualify(node)
            known = t.STATIC_VALUES.get(qualified or "")
            return (known,) if known is not None else UNKNOWN
        if type(node) is ast.Call:
            return self._call(node, depth)
        return UNKNOWN

    def _formatted(self, node: ast.expr, depth: int) -> Value:
        if type(node) is ast.FormattedValue:
            if node.conversion in (-1, ord("s")) and node.format_spec is None:
                return self.value(node.value, depth)
            return UNKNOWN
        return self.value(node, depth)

    def _binop(self, node: ast.BinOp, depth: int) -> Value:
        if type(node.op) is ast.Div:
            return join(self.value(node.left, depth), self.value(node.right, depth))
        if type(node.op) is not ast.Add:
            return UNKNOWN
        operands: list[ast.expr] = []
        while type(node) is ast.BinOp and type(node.op) is ast.Add:  # a + b + c nests left
            operands.append(node.right)
            node = node.left  # type: ignore[assignment]
        operands.append(node)
        return concat(*(self.value(o, depth) for o in reversed(operands)))

    def _name(self, name: str, depth: int) -> Value:
        if name in self.memo:
            return self.memo[name]
        bound = self.program.assigned(name)
        if bound is None or name in self.busy:
            qualified = self.program.resolve_name(name)
            known = t.STATIC_VALUES.get(qualified or "")
            return (known,) if known is not None else UNKNOWN
        self.busy.add(name)
        result = self.value(bound, depth)
        self.busy.discard(name)
        self.memo[name] = result
        return result

    def _call(self, node: ast.Call, depth: int) -> Value:
        if any(type(a) is ast.Starred for a in node.args) or node.keywords:
            return UNKNOWN
        func = node.func
        qualified = self.program.qualify(func)
        if qualified in _JOINS or qualified in t.PATH_TYPES:
            return join(*(self.value(a, depth) for a in node.args)) if node.args else (".",)
        if qualified in _SAME_VALUE and len(node.args) == 1:
            return self.value(node.args[0], depth)
        if qualified in ("os.getcwd", "os.getcwdb", "pathlib.Path.cwd"):
            return (".",)
        if qualified == "pathlib.Path.home":
            return ("~",)
        if qualified is None and type(func) is ast.Attribute:
            if func.attr == "joinpath":
                parts = [self.value(a, depth) for a in node.args]
                return join(self.value(func.value, depth), *parts)
            if func.attr in _SAME_METHODS and not node.args:
                return self.value(func.value, depth)
        return UNKNOWN

    # -- literals that are lists or dicts ---------------------------------------------------
    def literal(self, node: ast.expr, call: ast.Call) -> ast.expr:
        """The list/tuple/dict a name is bound to, if any; records that `call` relies on it."""
        if type(node) is ast.Name:
            bound = self.program.assigned(node.id)
            if bound is not None and type(bound) in (ast.List, ast.Tuple, ast.Dict):
                if type(bound) is not ast.Tuple:
                    self.relied.setdefault(node.id, set()).add(id(call))
                return bound
        return node

    def argv(self, node: ast.expr, call: ast.Call) -> list[Value] | None:
        node = self.literal(node, call)
        if type(node) not in (ast.List, ast.Tuple):
            return None
        return [UNKNOWN if type(e) is ast.Starred else self.value(e)
                for e in node.elts]  # type: ignore[attr-defined]


__all__ = ["PLACEHOLDER", "UNKNOWN", "Evaluator", "Part", "Value", "concat", "join", "static",
           "to_bash", "to_word"]
