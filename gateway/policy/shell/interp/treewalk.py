"""The frame every tree-sitter analyser shares: parse, one walk, names bound once, verdict.

One walk over the tree records what a language's `binds` handlers say about names (how often
each is bound, the value of those bound exactly once) and keeps the nodes its `checks`
handlers look at; the checks then run in source order, once every binding is known, so a
use that comes before its binding in the text (hoisting, functions called later) is judged
the same. Name resolution is flow- and scope-insensitive on purpose, as for Python: a name
bound anywhere to a module is that module everywhere, and a name has a known value only when
the whole program binds it once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from tree_sitter import Node

from gateway.policy.shell.interp.collect import Collector
from gateway.policy.shell.interp.effects import CodeEffects
from gateway.policy.shell.interp.parsing import parse, text
from gateway.policy.shell.interp.values import UNKNOWN, Value, concat

MAX_DEPTH = 48
"""Nested expressions followed when folding a value; deeper is unknown."""

Handler = Callable[[Node], None]


class TreeAnalysis:
    language = ""

    def __init__(self, source: str) -> None:
        self.source = source
        self.out = Collector(self.language, len(source))
        self.counts: Counter[str] = Counter()
        """How many times each name is bound (assigned, declared, a parameter, ...)."""
        self.single: dict[str, Node] = {}
        """The value expression of a name bound by a plain assignment (valid when counted once)."""
        self.memo: dict[str, Value] = {}
        self.busy: set[str] = set()
        self.binds: dict[str, Handler] = {}
        self.checks: dict[str, Handler] = {}
        self.cap = max(4 * len(source), 4096)
        self.parents: dict[int, Node] = {}

    # -- the run -------------------------------------------------------------------------------
    def analyse(self) -> CodeEffects:
        root = parse(self.language, self.source)
        if isinstance(root, str):
            return CodeEffects(unparseable=root)
        pending: list[tuple[Handler, Node]] = []
        binds, checks = self.binds, self.checks
        for node in self.walk(root):
            kind = node.type
            bind = binds.get(kind)
            if bind is not None:
                bind(node)
            check = checks.get(kind)
            if check is not None:
                pending.append((check, node))
        self.prepare()
        for check, node in pending:
            check(node)
            if self.out.problem:
                break
        self.finish()
        return self.out.effects()

    def walk(self, root: Node) -> Iterator[Node]:
        """Every node, parents first, recording each one's parent: `Node.parent` searches
        down from the root, so asking it for every node costs time quadratic in the tree."""
        parents = self.parents
        stack: list[Node] = []
        cursor = root.walk()
        while True:
            node = cursor.node
            if node is not None:
                if stack:
                    parents[node.id] = stack[-1]
                yield node
                if cursor.goto_first_child():
                    stack.append(node)
                    continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    return
                stack.pop()

    def parent(self, node: Node) -> Node | None:
        return self.parents.get(node.id)

    def up(self, node: Node, transparent: frozenset[str]) -> tuple[Node | None, Node]:
        """The first ancestor that is not a `transparent` wrapper (parentheses), and its
        child on the way (the node itself, or the outermost wrapper)."""
        child = node
        parent = self.parent(node)
        while parent is not None and parent.type in transparent:
            child = parent
            parent = self.parent(parent)
        return parent, child

    def prepare(self) -> None:
        """Between the walk and the checks, once every binding is known."""

    def finish(self) -> None:
        """Checks that need the whole program seen (a language may add its own)."""

    def fail(self, why: str) -> None:
        self.out.fail(why)

    # -- names -------------------------------------------------------------------------------
    def bound(self, name: str, value: Node | None = None) -> None:
        """`name` is bound here, to `value` when it is a plain assignment of an expression."""
        self.counts[name] += 1
        if value is not None:
            self.single[name] = value

    def assigned(self, name: str) -> Node | None:
        """The value of a name the whole program binds exactly once, by a plain assignment."""
        if self.counts[name] != 1:
            return None
        return self.single.get(name)

    def name_value(self, name: str, depth: int) -> Value:
        if name in self.memo:
            return self.memo[name]
        bound = self.assigned(name)
        if bound is None or name in self.busy:
            return UNKNOWN
        self.busy.add(name)
        result = self.value(bound, depth + 1)
        self.busy.discard(name)
        self.memo[name] = result
        return result

    # -- values ------------------------------------------------------------------------------
    def value(self, node: Node, depth: int = 0) -> Value:
        """The static value of an expression; UNKNOWN parts where it is computed at run time."""
        if depth > MAX_DEPTH:
            return UNKNOWN
        result = self.fold(node, depth + 1)
        if sum(len(p) for p in result if p is not None) > self.cap:
            return UNKNOWN
        return result

    def fold(self, node: Node, depth: int) -> Value:  # pragma: no cover - each language's own
        raise NotImplementedError

    def values(self, nodes: Iterable[Node], depth: int = 0) -> list[Value]:
        return [self.value(n, depth) for n in nodes]

    def joined(self, nodes: Iterable[Node], depth: int) -> Value:
        return concat(*(self.value(n, depth) for n in nodes))

    def plus(self, node: Node, depth: int) -> Value:
        """A binary expression: `left + right` joins the strings; another operator is
        computed at run time."""
        operator = field(node, "operator")
        left, right = field(node, "left"), field(node, "right")
        if operator is not None and text(operator) == "+" and left is not None and (
                right is not None):
            return concat(self.value(left, depth), self.value(right, depth))
        return UNKNOWN


def named_children(node: Node) -> list[Node]:
    """The node's named children, comments left out."""
    return [c for c in node.named_children if c.type != "comment"]


def field(node: Node, name: str) -> Node | None:
    return node.child_by_field_name(name)


def is_field(parent: Node, name: str, child: Node) -> bool:
    found = parent.child_by_field_name(name)
    return found is not None and found.id == child.id


__all__ = ["MAX_DEPTH", "TreeAnalysis", "field", "is_field", "named_children", "text"]
