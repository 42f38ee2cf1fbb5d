"""Where tree-sitter-bash reads a word other than bash does, and the text that it reads right.

tree-sitter-bash 0.25 ends a word at a second `$name` that follows a `/` and is followed by
more of the word: `$d/$f/x` parses as the two words `$d/$` and `f/x`, `x=$a/$b.c` as the
assignment `x=$a/$` and the command `b.c`. bash reads one word (`cp a $x/$y/ci.yml` writes
`.github/workflows/ci.yml` when x and y hold those names). Such a `$` is a token of its own,
not the start of an expansion, and is followed at once by a name: `$name` written `${name}`
means the same to bash and parses right.

It also fails on a here-string after a file redirection (`cat > out <<< "$x"`,
`grep -q y 2>/dev/null <<< "$x"`): `<<` becomes an error and `< WORD` a redirection. bash
applies redirections left to right, so the here-string may come first when none of those
before it touches stdin; it parses right there.
"""

from __future__ import annotations

import re
from functools import lru_cache

from tree_sitter import Language, Node, Query, QueryCursor

_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*|[0-9]")
_EXPANDING = frozenset({"simple_expansion", "expansion"})
_DOLLAR_NAME = re.compile(rb"\$[A-Za-z_0-9]")


@lru_cache(maxsize=1)
def _dollars(language: Language) -> Query:
    return Query(language, '("$" @dollar)')


def misread_names(root: Node, data: bytes, language: Language) -> list[int]:
    """Offsets in `data` of each `$` that begins an expansion in bash and is a lone token in
    the tree (empty for a tree that reads every `$name` as bash does)."""
    if len(_DOLLAR_NAME.findall(data)) < 2:
        return []  # the misreading needs an expansion before the one it misses
    captures = QueryCursor(_dollars(language)).captures(root)
    return sorted(
        node.start_byte for node in captures.get("dollar", [])
        if node.parent is not None and node.parent.type not in _EXPANDING
        and _NAME.match(data, node.end_byte)
    )


def braced(data: bytes, offsets: list[int]) -> bytes:
    """`data` with the `$name` at each offset written `${name}`."""
    out: list[bytes] = []
    last = 0
    for offset in offsets:
        name = _NAME.match(data, offset + 1)
        assert name is not None
        out += [data[last:offset + 1], b"{", name.group(), b"}"]
        last = name.end()
    out.append(data[last:])
    return b"".join(out)


_STDIN_TOUCHED = re.compile(rb"^0|^<|&0")
"""A redirection of stdin (`< f`, `0>f`, `<&3`, `<>f`) or one copying it (`>&0`)."""


def misplaced_herestrings(root: Node) -> list[tuple[int, int, int]]:
    """(where the redirections before it start, where it starts, where it ends) for each
    here-string tree-sitter misreads after a file redirection, when moving it first keeps
    bash's meaning (empty for a tree without errors)."""
    if not root.has_error:
        return []
    found: list[tuple[int, int, int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.named_children)
        if node.type != "redirected_statement":
            continue
        children = node.children
        for at, child in enumerate(children[1:-1], start=1):
            after = children[at + 1]
            if (child.type == "ERROR" and child.text == b"<<" and after.type == "file_redirect"
                    and after.start_byte == child.end_byte
                    and (after.text or b"").startswith(b"<")):
                before = children[1:at]
                if before and all(b.type == "file_redirect"
                                  and not _STDIN_TOUCHED.search(b.text or b"") for b in before):
                    found.append((before[0].start_byte, child.start_byte, after.end_byte))
                break
    return found


def herestrings_first(data: bytes, moves: list[tuple[int, int, int]]) -> bytes:
    """`data` with each misplaced here-string written before the redirections it followed."""
    for first, start, end in sorted(moves, reverse=True):
        data = data[:first] + data[start:end] + b" " + data[first:start] + data[end:]
    return data
