"""Static values of shell words: quotes, escapes and line continuations removed.

A word whose value depends on run-time expansion is marked dynamic; unquoted glob or brace
characters are marked too, since bash rewrites such words before running them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set
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
_PLAIN_WORD = frozenset("*?[{\\")
_DQ_ESCAPE = re.compile(r'\\([$`"\\])')
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    dynamic: bool = False
    """Part of the value is only known at run time ($x, $(...), `...`)."""
    lead_dynamic: bool = False
    """The value starts with a run-time part, so it could begin with '-'."""
    globby: bool = False
    """Unquoted glob or brace characters: bash may turn it into other words."""
    verbatim: bool = False
    """Glob characters in the text are quoted (or escaped): bash passes them as they are.
    A Word derived from another without saying so is not verbatim: its `*` may glob."""
    process: bool = False
    """A process substitution: the program gets a /dev/fd path, not a file on disk."""
    pattern: str = ""
    """What the value is known to match when it is only known at run time (a file find
    selects, a pattern a program matches itself): a path glob whose `*` may match a
    leading dot and whose `**` is any number of directories, relative to the command's
    directory unless absolute."""

    tree: bool = False
    """Everything under a directory the command acts on recursively (`grep -r x DIR`,
    `rm -rf DIR`): the names that exist there now, its own pattern `DIR/**`."""

    plain_names: bool = False
    """A glob known to expand only to plain names besides its own text: none begins with
    '-' (an option) or '|', '<', '>', '+', a blank, nor ends with '|' (perl's two-argument
    open); looked up on disk when nothing in the command may create such a name first."""

    @property
    def may_be_option(self) -> bool:
        """Could start with '-' once expanded: `$o`, `-$o`, `-"$o"`, `*` or `-*` (a file
        named -rf)."""
        if self.lead_dynamic or (self.dynamic and self.text.startswith("-")):
            return True
        return self.option_glob and not self.plain_names

    @property
    def option_glob(self) -> bool:
        """A glob whose expansion could begin with '-'."""
        return self.globby and self.text[:1] in ("*", "?", "[", "{", "-")


def operand_words(args: Sequence[Word], values: Set[str]) -> list[Word]:
    """The words that are neither options nor the value of an option in `values`."""
    operands: list[Word] = []
    skip = False
    for word in args:
        if skip:
            skip = False
        elif word.text.startswith("-"):
            skip = word.text in values
        else:
            operands.append(word)
    return operands


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def _unescape_unquoted(raw: str) -> str:
    return _ESCAPE.sub(r"\1", raw.replace("\\\n", ""))


_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
                   "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ANSI_ESCAPE = re.compile(
    r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})"
    r"|U([0-9A-Fa-f]{1,8})|c(.))",
    re.S,
)


def decode_ansi_c(body: str, keep_nul: bool = False) -> str:
    """The text of $'...' as bash decodes it (unknown escapes stay as written); `keep_nul`:
    as printf and echo -e write it, NUL bytes included."""

    def one(found: re.Match[str]) -> str:
        simple, octal, hex2, hex4, hex8, control = found.groups()
        if simple is not None:
            return _SIMPLE_ESCAPES[simple]
        if control is not None:
            return chr(ord(control.upper()) ^ 0x40) if control != "?" else "\x7f"
        digits, base = next((d, b) for d, b in ((octal, 8), (hex2, 16), (hex4, 16), (hex8, 16))
                            if d is not None)
        code = int(digits, base) & (0xFF if base == 8 else 0x10FFFF)
        return chr(code) if code < 0xD800 or code > 0xDFFF else "\ufffd"

    text = _ANSI_ESCAPE.sub(one, body)
    return text if keep_nul else text.split("\0", 1)[0]  # $'..' stops at a NUL


def _ansi_c(raw: str) -> str:
    return decode_ansi_c(raw[2:-1])


_DIRECTORY_TILDE = re.compile(r"~([+-]?)([0-9]*)(?=/|$)")
"""`~+` and `~-` are $PWD and $OLDPWD; `~N`, `~+N`, `~-N` name the directory stack."""


def word_value(node: Node) -> Word:
    """The value bash would pass for this word, as far as it is known before running."""
    first = node.named_children[0] if node.type == "concatenation" else node
    if first is not None and first.type == "word":
        tilde = _DIRECTORY_TILDE.match(_text(first))
        if tilde is not None and (tilde.group(1) or tilde.group(2)):
            return _directory_tilde(word_value_of(node), tilde)
    return word_value_of(node)


def _directory_tilde(word: Word, tilde: re.Match[str]) -> Word:
    """`~+/x` is $PWD/x and `~-/x` $OLDPWD/x (bash expands them only unquoted, at the
    start); a directory-stack entry (`~1`, `~-0`) is a directory only known at run time."""
    sign, digits = tilde.groups()
    start = (f"$(dirs -l {sign or '+'}{digits})" if digits  # no binding of DIRSTACK adds one
             else "${PWD}" if sign == "+" else "${OLDPWD}")
    return Word(start + word.text[tilde.end():], dynamic=True, globby=word.globby)


def word_value_of(node: Node) -> Word:
    kind = node.type
    if kind in _DYNAMIC:
        return Word(_text(node), dynamic=True, lead_dynamic=True,
                    process=kind == "process_substitution")
    if kind == "raw_string":
        return _quoted(Word(_text(node)[1:-1]))
    if kind == "ansi_c_string":
        return _quoted(Word(_ansi_c(_text(node))))
    if kind in ("string", "translated_string"):
        return _quoted(_string(node))
    if kind == "concatenation":
        parts = [word_value_of(child) for child in node.named_children]
        if not parts:
            return Word(_unescape_unquoted(_text(node)))
        globby = any(p.globby for p in parts) or _BRACE.search(_text(node)) is not None
        return Word(
            "".join(p.text for p in parts),
            dynamic=any(p.dynamic for p in parts),
            lead_dynamic=parts[0].lead_dynamic,
            globby=globby,
            verbatim=not globby and any(p.verbatim for p in parts),
        )
    raw = _text(node)
    if kind == "word":
        if _PLAIN_WORD.isdisjoint(raw):
            return Word(raw)  # the common case: no escapes, globs or braces
        unescaped = _unescape_unquoted(raw)
        stripped = re.sub(r"\\.", "", raw)
        globby = any(c in stripped for c in "*?[") or _BRACE.search(stripped) is not None
        return Word(unescaped, globby=globby,
                    verbatim=not globby and not _GLOB_CHARS.isdisjoint(unescaped))
    return Word(_unescape_unquoted(raw))


def _quoted(word: Word) -> Word:
    """A quoted word: its glob characters are text."""
    if _GLOB_CHARS.isdisjoint(word.text):
        return word
    return Word(word.text, word.dynamic, word.lead_dynamic, verbatim=True)


def _string(node: Node) -> Word:
    pieces: list[str] = []
    literal: list[str] = []
    dynamic = False
    lead = False
    raw = node.text or b""

    def flush() -> None:
        text = "".join(literal)
        pieces.append(_DQ_ESCAPE.sub(r"\1", text.replace("\\\n", "")))
        literal.clear()

    # tree-sitter-bash leaves the newlines of a multi-line string between its children
    at = node.start_byte + 1
    for child in node.named_children:
        literal.append(raw[at - node.start_byte:child.start_byte - node.start_byte]
                       .decode("utf-8", "replace"))
        if child.type == "string_content":
            literal.append(_text(child))
        else:
            flush()
            dynamic = True
            lead = lead or not "".join(pieces)
            pieces.append(_text(child))
        at = child.end_byte
    literal.append(raw[at - node.start_byte:len(raw) - 1].decode("utf-8", "replace"))
    flush()
    return Word("".join(pieces), dynamic=dynamic, lead_dynamic=lead)
