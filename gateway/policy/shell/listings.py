"""Programs whose output is a list of paths, as Words (for xargs and `$(...)` to use):
`ls` given files (their names, looked up now), `grep -l`/`-L` (files among its operands
or under a directory it searches). Anything else prints what is not known here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from gateway.policy.shell.globs import ANY
from gateway.policy.shell.words import Word

Expand = Callable[[Word], list[str] | None]
"""The names a word stands for now (a glob's matches), or None when not known."""
IsDir = Callable[[str], bool]

_LS_PLAIN = re.compile(r"-[1dartSUXvAc]+|--color=never|--sort=\w+|--")
"""ls options that leave its output one name per line, as given."""
_UNSAFE = re.compile(r"[\s'\"\\]")
"""Characters xargs would read as more than part of a name."""
_GREP_LIST = re.compile(r"-[a-zA-Z]*[lL][a-zA-Z]*")


def listed(name: str, words: Sequence[Word], expand: Expand, is_dir: IsDir
           ) -> list[Word] | None:
    if name == "ls":
        return _ls(words, expand, is_dir)
    if name in ("grep", "egrep", "fgrep", "rg"):
        return _grep(name, words)
    return None


def _ls(words: Sequence[Word], expand: Expand, is_dir: IsDir) -> list[Word] | None:
    options = [w for w in words[1:] if w.text.startswith("-") and not w.dynamic]
    operands = [w for w in words[1:] if w not in options]
    if not operands or any(not _LS_PLAIN.fullmatch(w.text) for w in options):
        return None
    whole = any("d" in w.text for w in options if not w.text.startswith("--"))
    out: list[Word] = []
    for operand in operands:
        names = expand(operand)
        if names is None:
            return None
        for found in names:
            if _UNSAFE.search(found) or (not whole and is_dir(found)):
                return None  # a directory lists its entries, without its own name
            out.append(Word(found, verbatim=True))
    return out


def _grep(name: str, words: Sequence[Word]) -> list[Word] | None:
    """grep -l PATTERN FILES | -r DIR: the files it names are among its operands."""
    texts = [w.text for w in words[1:]]
    if name != "rg" and not any(_GREP_LIST.fullmatch(t) or t in (
            "--files-with-matches", "--files-without-match") for t in texts):
        return None
    if name == "rg" and not any(t in ("-l", "--files-with-matches", "--files") for t in texts):
        return None
    operands: list[Word] = []
    pattern_seen = any(t in ("-e", "-f", "--regexp", "--file") for t in texts)
    skip = False
    for word in words[1:]:
        if skip:
            skip = False
            continue
        if word.text in ("-e", "-f", "--regexp", "--file", "-m", "-A", "-B", "-C",
                         "--include", "--exclude", "--exclude-dir", "-g", "--glob", "-t"):
            skip = True
            continue
        if word.text.startswith("-") and not word.dynamic:
            continue
        if not pattern_seen and "--files" not in texts:
            pattern_seen = True  # the first operand is the pattern
            continue
        operands.append(word)
    if not operands:
        operands = [Word(".")]
    out: list[Word] = []
    for operand in operands:
        if operand.dynamic:
            return None
        below = f"{operand.text.rstrip('/')}/{ANY}"
        out.append(Word(below, dynamic=True, pattern=below))
    return out
