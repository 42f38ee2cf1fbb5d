"""Tree-sitter parsers for the interpreter languages, loaded when a command runs one.

Each grammar comes from its PyPI package (tree-sitter-javascript, -ruby, -perl, -php, -lua);
only its compiled `_binding` is loaded (gateway.policy.shell.grammar). A text the grammar
cannot parse without errors is reported as such: what a program with syntax errors does is
not known, so it is never taken for a program that does nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from functools import cache

from tree_sitter import Language, Node, Parser, Point

_GRAMMARS = {
    "javascript": ("tree_sitter_javascript", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "perl": ("tree_sitter_perl", "language"),
    "php": ("tree_sitter_php", "language_php_only"),  # `php -r` code has no <?php tag
    "lua": ("tree_sitter_lua", "language"),
}
PARSED = frozenset(_GRAMMARS)
PARSE_BUDGET = 0.5
"""Seconds a parse may take. The parsers are linear on ordinary code, but error recovery on
text built for it can take seconds (tree-sitter-perl on 64 KiB of `open(`): past this the
program is unparseable, well inside the decision's time budget."""


@cache
def parser(language: str) -> Parser:
    from gateway.policy.shell.grammar import grammar_language

    package, function = _GRAMMARS[language]
    handle = grammar_language(package, function)
    if isinstance(handle, int):  # a pointer from an older binding: wrap it as newer ones do
        handle = _capsule(handle)
    return Parser(Language(handle))


def _capsule(pointer: int) -> object:
    import ctypes

    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
    return new(pointer, b"tree_sitter.Language", None)


def parse(language: str, source: str) -> Node | str:
    """The root of the tree, or why the text is not a valid program in `language`."""
    try:
        data = source.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return f"{language} program is not valid text (a lone surrogate)"
    deadline = time.monotonic() + PARSE_BUDGET

    view = memoryview(data)  # some grammars read again at every token: slices must not copy

    def read(offset: int, _: Point) -> memoryview:
        return view[offset: offset + 65536]

    def cancel(_: int, __: bool) -> bool:
        return time.monotonic() > deadline

    engine = parser(language)
    engine.reset()  # a cancelled parse would otherwise resume, on this text, where it stopped
    try:
        tree = engine.parse(read, progress_callback=cancel)
    except ValueError:  # the parse was cancelled
        tree = None
    if tree is None or time.monotonic() > deadline:
        return f"{language} program takes too long to parse"
    # A tree parsed from a callback reads its text back through it: parsed again from the
    # bytes, reusing every node (no edits), it holds them, and Node.text is a plain slice.
    root = engine.parse(data, old_tree=tree).root_node
    if root.has_error:
        return f"not valid {language}: {_error_at(root)}"
    return root


def _error_at(root: Node) -> str:
    for node in walk(root):
        if node.is_error or node.is_missing:
            line, column = node.start_point
            what = f"missing {node.type}" if node.is_missing else "syntax error"
            return f"{what} at line {line + 1}, column {column + 1}"
    return "syntax error"


def walk(root: Node) -> Iterator[Node]:
    """Every node, parents before children, in source order; no recursion."""
    cursor = root.walk()
    while True:
        node = cursor.node
        if node is not None:
            yield node
        if cursor.goto_first_child():
            continue
        while not cursor.goto_next_sibling():
            if not cursor.goto_parent():
                return


def text(node: Node) -> str:
    return node.text.decode("utf-8", "surrogateescape") if node.text is not None else ""
