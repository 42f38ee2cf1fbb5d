"""bash's filename expansion, done the way bash does it or not at all.

A word's braces are expanded first (bracex, bash's rules); each alternative without glob
characters is a word as it is, each with them is matched against the disk with Python's
glob after its bash syntax is translated (`[^x]`, POSIX classes, `shopt -s nocaseglob`,
`dotglob`, `globstar`). What Python cannot match exactly (extended globs, a class it does
not know, too many names) is None: the caller treats the names as unknown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Sequence

from gateway.policy.paths import expand_user
from gateway.policy.shell.words import Word

MAX_MATCHES = 256
MAX_ALTERNATIVES = 64
GLOB_CHARS = frozenset("*?[")
ANY = "**"
"""A path pattern component for any number of directories."""
_CLASSES = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z",
    "space": " \t\n\r\f\v", "blank": " \t", "xdigit": "0-9A-Fa-f", "word": "a-zA-Z0-9_",
    "punct": "!-/:-@[-`{-~",
}
_CLASS = r"\[:([a-z]+):\]"
_EXTGLOB = r"[?*+@!]\("
GLOB_OPTIONS = frozenset({"dotglob", "nocaseglob", "globstar", "extglob", "nullglob",
                          "failglob"})


def alternatives(word: str) -> list[str] | None:
    """The words bash's brace expansion makes of `word` (None: more than can be checked)."""
    if "{" not in word:
        return [word]
    import bracex  # only words with braces need it

    try:
        return list(bracex.expand(word, limit=MAX_ALTERNATIVES))
    except (bracex.ExpansionLimitException, ValueError, RecursionError):
        return None


def is_pattern(text: str) -> bool:
    return not GLOB_CHARS.isdisjoint(text)


def to_python(pattern: str, options: Iterable[str] = ()) -> str | None:
    """The pattern in Python glob syntax, or None when Python cannot match it as bash does."""
    options = frozenset(options)
    if "extglob" in options and re.search(_EXTGLOB, pattern):
        return None
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "[":
            end = bracket_end(pattern, i)
            if end < 0:
                out.append("[[]")  # an unclosed [ is an ordinary character
                i += 1
                continue
            body = pattern[i + 1 : end]
            if body[:1] == "^":
                body = "!" + body[1:]
            if "[:" in body:
                translated = _classes(body)
                if translated is None:
                    return None
                body = translated
            if "nocaseglob" in options and any(c.isalpha() for c in body):
                return None
            out.append(f"[{body}]")
            i = end + 1
            continue
        if "nocaseglob" in options and char.isalpha() and char.lower() != char.upper():
            out.append(f"[{char.lower()}{char.upper()}]")
        else:
            out.append(char)
        i += 1
    return "".join(out)


def bracket_end(pattern: str, start: int) -> int:
    """Index of the `]` closing the bracket expression at `start`, or -1."""
    i = start + 1
    if i < len(pattern) and pattern[i] in "!^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1  # a ] first in the set is a member
    while i < len(pattern):
        if pattern.startswith("[:", i):
            close = pattern.find(":]", i + 2)
            if close < 0:
                return -1
            i = close + 2
            continue
        if pattern[i] == "]":
            return i
        if pattern[i] == "/":
            return -1  # a bracket never spans a slash
        i += 1
    return -1


def _classes(body: str) -> str | None:
    unknown = False

    def one(found: re.Match[str]) -> str:
        nonlocal unknown
        ranges = _CLASSES.get(found.group(1))
        if ranges is None:
            unknown = True
            return ""
        return ranges

    translated = re.sub(_CLASS, one, body)
    return None if unknown or "[:" in translated else translated


def expand(pattern: str, cwd: str, options: Iterable[str] = ()) -> list[str] | None:
    """The names `pattern` (one brace alternative) matches now, relative to `cwd` as
    written; [] when none; None when this cannot be known exactly."""
    import glob as globbing

    options = frozenset(options)
    translated = to_python(expand_user(pattern), options)
    if translated is None:
        return None
    found: list[str] = []
    try:
        for name in globbing.iglob(translated, root_dir=cwd or "/",
                                   recursive="globstar" in options,
                                   include_hidden="dotglob" in options):
            found.append(name)
            if len(found) > MAX_MATCHES:
                return None
    except (OSError, ValueError, RecursionError):
        return None
    return found


def options_set(commands: Iterable[tuple[str, Sequence[Word]]], bound: Container[str],
                environment: Callable[[str], str | None]) -> frozenset[str]:
    """Glob options the command may turn on anywhere (`shopt -s dotglob`, `bash -O
    globstar`, `GLOBIGNORE=`, which turns dotglob on, `BASHOPTS=`), or inherits."""
    found: set[str] = set()
    for name, words in commands:
        if name == "shopt" and any(w.text.startswith("-") and "s" in w.text[1:]
                                   for w in words[1:]):
            for word in words[1:]:
                if word.dynamic:
                    return GLOB_OPTIONS
                found.add(word.text)
        elif name in ("bash", "sh", "rbash"):
            for k, word in enumerate(words[1:-1], start=1):
                if word.text == "-O":
                    if words[k + 1].dynamic:
                        return GLOB_OPTIONS
                    found.add(words[k + 1].text)
    if "BASHOPTS" in bound:
        return GLOB_OPTIONS
    found.update((environment("BASHOPTS") or "").split(":"))
    if "GLOBIGNORE" in bound or environment("GLOBIGNORE"):
        found.add("dotglob")
    return frozenset(found & GLOB_OPTIONS)


def is_glob(word: Word) -> bool:
    """Whether bash (or the program) reads the word as a pattern: unquoted glob or brace
    characters, or glob characters no one said were quoted."""
    return word.globby or (not word.verbatim and is_pattern(word.text))


def glob_names(word: str, cwd: str, options: Iterable[str], creates: bool
               ) -> list[str] | None:
    """The names a glob word stands for when the command runs, as far as they are known
    now: its braces' alternatives, each pattern's matches, and a pattern that matches
    nothing as it is (bash passes it on). [] when a pattern matches nothing yet in a
    command that may create files first (only its pattern bounds the names); None when
    they cannot be known (more than can be checked, a syntax not matched exactly)."""
    found = alternatives(word)
    if found is None:
        return None
    names: list[str] = []
    runtime = False
    for alternative in found:
        if not is_pattern(alternative):
            names.append(alternative)
            continue
        matches = expand(alternative, cwd, options)
        if matches is None:
            return None
        runtime = runtime or (not matches and creates)
        names.extend(matches or [alternative])
    return [] if runtime else names


def crossing(pattern: str) -> str:
    """A pattern whose `*` also matches `/` (git pathspecs, zip, find -path) as one whose
    names include all it matches: its literal directories, then any directories, then a
    last name that ends as the pattern's last name does after its last `*`."""
    head, _, last = pattern.rpartition("/")
    cut = min((head.find(c) for c in "*?[" if c in head), default=-1)
    literal = head if cut < 0 else head[:cut].rpartition("/")[0]
    star = last.rfind("*")
    tail = last if star < 0 and cut < 0 else "*" + last[star + 1 :] if star >= 0 else last
    return "/".join(p for p in (literal, ANY, tail) if p)


def program_glob(word: Word) -> Word:
    """An operand the program globs itself: quoted or not, it is a pattern, matched by the
    program's rules (git's and zip's `*` match a leading dot and cross `/`), so the names
    it stands for are only known when it runs."""
    if word.dynamic or GLOB_CHARS.isdisjoint(word.text):
        return word
    return Word(word.text, dynamic=True, lead_dynamic=word.lead_dynamic, globby=word.globby,
                pattern=crossing(word.text))
