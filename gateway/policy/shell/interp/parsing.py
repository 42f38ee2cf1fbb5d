"""Tree-sitter parsers for the interpreter languages, loaded when a command runs one.

Each grammar comes from its PyPI package (tree-sitter-javascript, -ruby, -perl, -php, -lua);
only its compiled `_binding` is loaded (gateway.policy.shell.grammar). A text the grammar
cannot parse without errors is reported as such: what a program with syntax errors does is
not known, so it is never taken for a program that does nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

from tree_sitter import Language, Node, Parser

_GRAMMARS = {
    "javascript": ("tree_sitter_javascript", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "perl": ("tree_sitter_perl", "language"),
    "php": ("tree_sitter_php", "language_php_only"),  # `php -r` code has no <?php tag
    "lua": ("tree_sitter_lua", "language"),
}
PARSED = frozenset(_GRAMMARS)


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
    data = source.encode("utf-8", "surrogateescape")
    root = parser(language).parse(data).root_node
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
