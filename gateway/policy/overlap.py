"""Whether a path pattern (a glob, or what a program selects by name) and a path rule can
name the same file: a question about names alone, answered without the disk.

Both sides become a sequence of components, each a one-name pattern (`*`, `?`, `[...]`,
literal characters) or `**` (any number of components). Two sequences can meet when some
path matches both; deciding it is a table over (component, component) pairs, and two
one-name patterns meet when some name matches both, a table over their characters. Every
approximation is towards "they can meet": `*` may match a leading dot, a rule also names
everything under what it matches, a character class that is hard to compare meets any other.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from gateway.policy.paths import decision_home, expand_user
from gateway.policy.shell.globs import ANY, GLOB_CHARS, alternatives, bracket_end
from gateway.policy.shell.words import Word

if TYPE_CHECKING:
    from gateway.policy.paths import PathPattern

Token = tuple[str, str]
"""('*', ''), ('?', ''), ('c', char) or ('[', body without brackets)."""


def components(path: str) -> tuple[str, ...]:
    """An absolute pattern as components (`//`, `.` dropped)."""
    return tuple(part for part in path.split("/") if part and part != ".")


def normalized(parts: Sequence[str]) -> tuple[str, ...] | None:
    """`..` removed lexically where what it undoes is a literal name; None where it
    follows a pattern (a pattern directory may be a symbolic link: anywhere)."""
    out: list[str] = []
    for part in parts:
        if part == "..":
            if out and (out[-1] == ANY or _has_glob(out[-1])):
                return None
            if out:
                out.pop()
            continue
        out.append(part)
    return tuple(out)


def _has_glob(part: str) -> bool:
    return not GLOB_CHARS.isdisjoint(part)


Real = Callable[[str], str]
"""os.path.realpath, or a cache of it for one decision."""


def glob_forms(pattern: str, base: str | None, real: Real = os.path.realpath
               ) -> list[tuple[str, ...]] | None:
    """The pattern, absolute, as written and with its literal directories' symbolic links
    resolved (the part before the first pattern component); `base` None: a relative
    pattern may start anywhere. None: it cannot be placed (`..` after a pattern)."""
    expanded = expand_user(pattern)
    if expanded.startswith("/"):
        parts = components(expanded)
    elif base is None:
        parts = (ANY, *components(expanded))
    else:
        parts = (*components(base), *components(expanded))
    lexical = normalized(parts)
    if lexical is None:
        return None
    forms = [lexical]
    literal = 0
    while literal < len(parts) - 1 and not _has_glob(parts[literal]) and parts[literal] != ANY:
        literal += 1
    if literal:
        resolved = normalized((*components(real("/" + "/".join(parts[:literal]))),
                               *parts[literal:]))
        if resolved is None:
            return None
        if resolved != lexical:
            forms.append(resolved)
    return forms


@dataclass(frozen=True)
class RuleShape:
    """A path rule as component sequences, and where its files are on disk."""

    exact: tuple[tuple[str, ...], ...]
    """The rule as written, absolute from each form of its base."""
    floating: bool
    body: tuple[str, ...]
    root: str
    """The literal directory an anchored rule's files are all under."""
    under: tuple[tuple[str, ...], ...] = ()
    """`exact` and everything below what it matches (gitignore semantics)."""


def rule_shape(pattern: PathPattern, cwd: str, real: Real = os.path.realpath) -> RuleShape:
    if pattern.floating or pattern.anchor == "abs":
        base = "/"
    else:
        base = decision_home() if pattern.anchor == "home" else (cwd or "/")
    return _shape(pattern.source, pattern.floating, base, real(base),
                  "" if pattern.floating else os.path.join(base, pattern.prefix))


@lru_cache(maxsize=4096)
def _shape(source: str, floating: bool, base: str, real_base: str, root: str) -> RuleShape:
    body = _rule_body(source)
    if floating:
        return RuleShape(((ANY, *body),), True, body, "", ((ANY, *body, ANY),))
    exact = tuple((*components(b), *body) for b in dict.fromkeys((base, real_base)))
    return RuleShape(exact, False, body, root, tuple((*form, ANY) for form in exact))


@lru_cache(maxsize=1024)
def _rule_body(source: str) -> tuple[str, ...]:
    """The pattern part of a rule's text, its escapes widened to any character."""
    body = source[1:] if source == "~" or source.startswith(("//", "~/", "./")) else source
    out: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            out.append("?")
            i += 2
            continue
        out.append(body[i])
        i += 1
    return components("".join(out))


def meet(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether some path matches both component sequences."""
    return _meet(tuple(a), tuple(b))


@lru_cache(maxsize=4096)
def _meet(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    n, m = len(a), len(b)
    # can[i][j]: a[i:] and b[j:] can match the same sequence of names
    can = [[False] * (m + 1) for _ in range(n + 1)]
    can[n][m] = True
    for i in range(n, -1, -1):
        for j in range(m, -1, -1):
            if i == n and j == m:
                continue
            if i < n and a[i] == ANY:
                can[i][j] = can[i + 1][j] or (j < m and can[i][j + 1])
            elif j < m and b[j] == ANY:
                can[i][j] = can[i][j + 1] or (i < n and can[i + 1][j])
            elif i < n and j < m:
                can[i][j] = can[i + 1][j + 1] and names_meet(a[i], b[j])
    return can[0][0]


@lru_cache(maxsize=4096)
def names_meet(a: str, b: str) -> bool:
    """Whether some name matches both one-name patterns."""
    if not _has_glob(a) and not _has_glob(b):
        return a == b
    x, y = _tokens(a), _tokens(b)
    n, m = len(x), len(y)
    can = [[False] * (m + 1) for _ in range(n + 1)]
    can[n][m] = True
    for i in range(n, -1, -1):
        for j in range(m, -1, -1):
            if i == n and j == m:
                continue
            if i < n and x[i][0] == "*":
                can[i][j] = can[i + 1][j] or (j < m and can[i][j + 1])
            elif j < m and y[j][0] == "*":
                can[i][j] = can[i][j + 1] or (i < n and can[i + 1][j])
            elif i < n and j < m:
                can[i][j] = can[i + 1][j + 1] and _chars_meet(x[i], y[j])
    return can[0][0]


def _tokens(pattern: str) -> list[Token]:
    out: list[Token] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            if not out or out[-1][0] != "*":
                out.append(("*", ""))
        elif char == "?":
            out.append(("?", ""))
        elif char == "[":
            end = bracket_end(pattern, i)
            if end < 0:
                out.append(("c", "["))
            else:
                out.append(("[", pattern[i + 1 : end]))
                i = end
        else:
            out.append(("c", char))
        i += 1
    return out


def _chars_meet(x: Token, y: Token) -> bool:
    if x[0] == "?" or y[0] == "?":
        return True
    if x[0] == "c" and y[0] == "c":
        return x[1] == y[1]
    if x[0] == "c":
        return _in_class(x[1], y[1])
    if y[0] == "c":
        return _in_class(y[1], x[1])
    return True  # two classes: assume they share a character


def _in_class(char: str, body: str) -> bool:
    negated = body[:1] in ("!", "^")
    members = body[1:] if negated else body
    if "[:" in members:
        return True
    found = False
    i = 0
    while i < len(members):
        if i + 2 < len(members) and members[i + 1] == "-":
            found = found or members[i] <= char <= members[i + 2]
            i += 3
            continue
        found = found or members[i] == char
        i += 1
    return found != negated


def path_forms(word: Word, cwds: Sequence[str], cwd_unknown: bool,
               real: Real = os.path.realpath) -> list[tuple[str, ...]] | None:
    """The names a path known only at run time (a glob, or a Word with a `pattern`) may
    have, as component sequences from each directory it may be relative to; None when
    they cannot be placed."""
    patterns = [word.pattern] if word.pattern else alternatives(word.text)
    if patterns is None or (word.pattern and any(c in word.pattern for c in "$`")):
        return None  # a part only known at run time
    bases: list[str | None] = [*cwds, *([None] if cwd_unknown else [])]
    out: list[tuple[str, ...]] = []
    for pattern in patterns:
        for base in bases:
            forms = glob_forms(pattern, base, real)
            if forms is None:
                return None
            out.extend(forms)
    return out


MAX_WALK = 2_000
"""Entries looked at under a rule's own directory before a pattern is taken to reach it."""
MAX_TREE_WALK = 20_000
"""The same for a tree a recursive command acts on (`grep -r x .` in a project with a
virtual environment): such commands are common, and past it the call is denied."""


def could_name(path: Sequence[tuple[str, ...]] | None, rule: RuleShape,
               pattern: PathPattern, cwd: str, creates: bool, walk: int = MAX_WALK) -> bool:
    """Whether a path known only by a pattern (its `path_forms`) could name a file the
    rule matches when the command runs. By names first; then, unless the command may
    create files, by what is on disk: an anchored rule's files are under its directory,
    which is walked (bounded); a floating rule (`**/.env`) also names what is inside a
    directory of that name, looked for where the pattern starts and in `cwd`."""
    if path is None:
        return True
    if not any(_literal_heads_agree(p, u) and meet(p, u) for p in path for u in rule.under):
        return False
    if rule.floating:
        if any(meet(p, form) for p in path for form in rule.exact):
            # a name the rule matches: is there such a file where the pattern starts?
            roots = _literal_dirs(path)
            return creates or not roots or any(
                _existing_under(root, path, pattern, cwd, walk) for root in roots)
        # only inside a directory of that name: one the command makes holds only what it
        # writes there, so one that is there now
        return _named_directory(rule.body, [*_literal_dirs(path), cwd or "/"])
    return creates or _existing_under(rule.root, path, pattern, cwd, walk)


def _literal_dirs(path: Sequence[tuple[str, ...]]) -> list[str]:
    out: list[str] = []
    for form in path:
        head: list[str] = []
        for part in form[:-1]:
            if part == ANY or _has_glob(part):
                break
            head.append(part)
        if form and form[0] != ANY:
            out.append("/" + "/".join(head))
    return out


def _named_directory(body: tuple[str, ...], dirs: Sequence[str]) -> bool:
    """A directory the floating rule names, directly inside one of `dirs`."""
    import glob as globbing

    name = [part for part in body if part != ANY]
    if not name:
        return True
    for directory in dict.fromkeys(dirs):
        try:
            if next(globbing.iglob(os.path.join(*name, ""), root_dir=directory,
                                   include_hidden=True), None) is not None:
                return True
        except (OSError, ValueError):
            return True
    return False


def _existing_under(root: str, path: Sequence[tuple[str, ...]], pattern: PathPattern,
                    cwd: str, budget: int) -> bool:
    """A file under the rule's directory, now, that the path pattern and the rule both
    match (more than `budget` entries: assumed)."""
    if not os.path.lexists(root):
        return False
    # (path, a directory to enter): the directory entry tells, without a stat per entry.
    pending = [(root, os.path.isdir(root) and not os.path.islink(root))]
    while pending:
        current, enter = pending.pop()
        # The rule's regex first: it rejects almost every entry, for a fraction of `meet`.
        if pattern.matches((current,), cwd, anywhere=True) and any(
                meet(form, components(current)) for form in path):
            return True
        budget -= 1
        if budget <= 0:
            return True
        if not enter:
            continue
        try:
            with os.scandir(current) as entries:
                pending.extend((entry.path, _enters(entry)) for entry in entries)
        except OSError:
            continue
        if len(pending) > budget:
            return True
    return False


def _enters(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _literal_heads_agree(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """A cheap test first: two anchored sequences part at their first differing literal
    directory (most rules are about other directories)."""
    for x, y in zip(a, b, strict=False):
        if x == ANY or y == ANY or _has_glob(x) or _has_glob(y):
            return True
        if x != y:
            return False
    return True
