"""Static values of shell words: quotes, escapes and line continuations removed.

A word whose value depends on run-time expansion is marked dynamic; unquoted glob or brace
characters are marked too, since bash rewrites such words before running them.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from tree_sitter import Node

_DYNAMIC = frozenset(
    {
        "simple_expansion",
        "expansion",
        "command_substitution",
        "arithmetic_expansion",
        "process_substitution",
    }
)
_BRACE = re.compile(r"\{[^{}]*,[^{}]*\}|\{[^{}]*\.\.[^{}]*\}")
_ESCAPE = re.compile(r"\\(.)", re.S)
_DQ_ESCAPE = re.compile(r'\\([$`"\\])')


@dataclass(frozen=True)
class Word:
    text: str
    dynamic: bool = False
    """Part of the value is only known at run time ($x, $(...), `...`)."""
    lead_dynamic: bool = False
    """The value starts with a run-time part, so it could begin with '-'."""
    globby: bool = False
    """Unquoted glob or brace characters: bash may turn it into other words."""


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def _unescape_unquoted(raw: str) -> str:
    return _ESCAPE.sub(r"\1", raw.replace("\\\n", ""))


def _ansi_c(raw: str) -> str:
    body = raw[2:-1]
    try:
        return codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return body


def word_value(node: Node) -> Word:
    """The value bash would pass for this word, as far as it is known before running."""
    kind = node.type
    if kind in _DYNAMIC:
        return Word(_text(node), dynamic=True, lead_dynamic=True)
    if kind == "raw_string":
        return Word(_text(node)[1:-1])
    if kind == "ansi_c_string":
        return Word(_ansi_c(_text(node)))
    if kind in ("string", "translated_string"):
        return _string(node)
    if kind == "concatenation":
        parts = [word_value(child) for child in node.named_children]
        if not parts:
            return Word(_unescape_unquoted(_text(node)))
        return Word(
            "".join(p.text for p in parts),
            dynamic=any(p.dynamic for p in parts),
            lead_dynamic=parts[0].lead_dynamic,
            globby=any(p.globby for p in parts) or _BRACE.search(_text(node)) is not None,
        )
    raw = _text(node)
    if kind == "word":
        unescaped = _unescape_unquoted(raw)
        stripped = re.sub(r"\\.", "", raw)
        globby = any(c in stripped for c in "*?[") or _BRACE.search(stripped) is not None
        return Word(unescaped, globby=globby)
    return Word(_unescape_unquoted(raw))


def _string(node: Node) -> Word:
    pieces: list[str] = []
    dynamic = False
    lead = False
    for index, child in enumerate(node.named_children):
        if child.type == "string_content":
            pieces.append(_DQ_ESCAPE.sub(r"\1", _text(child).replace("\\\n", "")))
        else:
            dynamic = True
            lead = lead or (index == 0 and not pieces)
            pieces.append(_text(child))
    return Word("".join(pieces), dynamic=dynamic, lead_dynamic=lead)
