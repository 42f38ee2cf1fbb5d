"""Where tree-sitter-bash reads a word other than bash does, and the text that it reads right.

tree-sitter-bash 0.25 ends a word at a second `$name` that follows a `/` and is followed by
more of the word: `$d/$f/x` parses as the two words `$d/$` and `f/x`, `x=$a/$b.c` as the
assignment `x=$a/$` and the command `b.c`. bash reads one word (`cp a $x/$y/ci.yml` writes
`.github/workflows/ci.yml` when x and y hold those names). Such a `$` is a token of its own,
not the start of an expansion, and is followed at once by a name: `$name` written `${name}`
means the same to bash and parses right.
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
