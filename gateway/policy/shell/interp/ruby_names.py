"""What a Ruby program's names and literals stand for: bindings (assignments, parameters,
regex captures, included modules), constants' names, and strings, symbols and
interpolations folded to values."""

from __future__ import annotations

import re

from tree_sitter import Node

from gateway.policy.shell.interp.treewalk import TreeAnalysis, field, is_field, named_children, text
from gateway.policy.shell.interp.values import UNKNOWN, Value, concat

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
STRINGS = frozenset({"string", "chained_string", "simple_symbol", "delimited_symbol",
                     "bare_string", "character", "binary", "identifier",
                     "parenthesized_statements"})


class RubyNames(TreeAnalysis):
    """A Ruby program's bindings and values, resolved before its checks run."""

    language = "ruby"

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.included: set[str] = set()
        self.binds = {"assignment": self.assignment, "identifier": self.binding,
                      "binary": self.captures, "call": self.include}

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
            self.included.add(constant_name(arg) or "?")

    def args(self, node: Node) -> list[Node] | None:
        """Positional arguments, trailing `key: value` pairs and a block argument included."""
        args = field(node, "arguments")
        if args is None:
            return []
        return [a for a in named_children(args)]
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
            return self.plus(node, depth)
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


def constant_name(node: Node) -> str | None:
    if node.type == "constant":
        return text(node)
    if node.type == "scope_resolution":
        scope, name = field(node, "scope"), field(node, "name")
        if name is None:
            return None
        if scope is None:
            return "::" + text(name)
        inner = constant_name(scope)
        return f"{inner.removeprefix('::')}::{text(name)}" if inner is not None else None
    return None


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
