"""The arguments xargs adds to its command, when its input is known before it runs.

xargs reads items from stdin and appends them to the command (or puts each in place of the
`-I` replace string). Fed a known literal (`xargs cat <<< .env`, `echo .env | xargs cat`),
the items are read here as xargs reads them; fed by find, each is a file find selects;
otherwise they are unknown (and may be options).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gateway.policy.shell.words import Word, decode_ansi_c

MAX_ITEMS = 64
"""Items read from a literal input; more, and the input is taken as unknown."""
MAX_RUNS = 16
"""Commands an `-I` replace string makes of a literal input (one per item)."""
_VALUE_OPTS = frozenset({"-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L",
                         "--max-lines", "-n", "--max-args", "-P", "--max-procs", "-s",
                         "--max-chars", "--process-slot-var"})
_BLANKS = re.compile(r"[ \t\n]+")


@dataclass(frozen=True)
class Xargs:
    marker: str = ""
    """The -I/-i/--replace string ('' when items are appended)."""
    delimiter: str | None = None
    """None: blanks separate items, quotes group them; else the one separator."""
    from_file: bool = False
    """-a FILE: the items do not come from stdin."""


def xargs_options(options: Sequence[Word]) -> Xargs:
    """xargs's own options (the words between its name and the command)."""
    marker = ""
    delimiter: str | None = None
    from_file = False
    i = 0
    while i < len(options):
        text = options[i].text
        following = options[i + 1].text if i + 1 < len(options) else ""
        long_value = text.partition("=")[2]
        if text in ("-0", "--null"):
            delimiter = "\0"
        elif text in ("-a", "--arg-file") or text.startswith(("--arg-file=", "-a")):
            from_file = True
        elif text in ("-d", "--delimiter") or text.startswith(("--delimiter=", "-d")):
            value = following if text in ("-d", "--delimiter") else (
                long_value if text.startswith("--") else text[2:])
            delimiter = decode_ansi_c(value)[:1] if value else None
        elif text == "-I":
            marker = following
        elif text.startswith("-I"):
            marker = text[2:]
        elif text in ("-i", "--replace"):
            marker = "{}"
        elif text.startswith("--replace="):
            marker = long_value or "{}"
        elif text.startswith("-i") and not text.startswith("--"):
            marker = text[2:]
        if text in _VALUE_OPTS:
            i += 1
        i += 1
    if marker and delimiter is None:
        delimiter = "\n"  # -I reads whole lines
    return Xargs(marker, delimiter, from_file)


def items(text: str, xargs: Xargs) -> list[str] | None:
    """The items xargs reads from `text`; None when it cannot be told here."""
    if xargs.delimiter is not None:
        parts = text.split(xargs.delimiter)
        if xargs.delimiter == "\n" and xargs.marker:
            parts = [p.lstrip(" \t") for p in parts]
            if any(c in p for p in parts for c in "'\"\\"):
                return None  # -I still reads quotes: not followed here
        found = [p for p in parts if p]
    elif not any(c in text for c in "'\"\\"):
        found = [p for p in _BLANKS.split(text) if p]
    else:
        import shlex  # quoted input only

        try:
            found = shlex.split(text, posix=True)
        except ValueError:
            return None
    return found if len(found) <= MAX_ITEMS else None


def put(word: Word, marker: str, value: Word) -> Word:
    """`word` with the replace string standing for `value` (a literal, or a file find
    selects: then only a word that starts with the string keeps a pattern)."""
    if marker not in word.text:
        return word
    if not value.dynamic:
        return Word(word.text.replace(marker, value.text))
    suffix = word.text[len(marker):] if word.text.startswith(marker) else None
    if value.pattern and suffix is not None and marker not in suffix and not any(
            c in suffix for c in "*?["):
        return Word(value.text + suffix, dynamic=True, pattern=value.pattern + suffix)
    return Word(word.text, dynamic=True,
                lead_dynamic=value.lead_dynamic and word.text.startswith(marker))
