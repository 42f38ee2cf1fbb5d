"""Path rules for Read/Edit-family tools: gitignore-style globs anchored as Claude Code does.

`//abs/**` is absolute, `~/x` is under the home directory, `/x` is under the project root
(the directory the session started in, whatever the agent has `cd`-ed into since), and `x`
or `./x` is relative to cwd (unanchored gitignore patterns such as `*.env`, `**/.env` or
`**/.git/config` match at any depth, outside cwd too). Targets are normalized (`~`, `..`,
relative to cwd) and checked both as written and with symlinks resolved.
"""

from __future__ import annotations

import os
import pwd
import re
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, NamedTuple

Anchor = Literal["abs", "home", "root", "cwd"]


@dataclass(frozen=True)
class PathPattern:
    anchor: Anchor
    regex: re.Pattern[str]
    floating: bool
    """An unanchored pattern (`*.env`): deny and ask rules also apply outside cwd."""
    source: str
    prefix: str = ""
    """The literal directory the pattern starts in, relative to its anchor (`.ssh` for
    `~/.ssh/**`): where other names of a hard-linked file are looked for."""

    def search_root(self, cwd: str) -> str:
        if self.floating:
            return cwd or "/"
        return os.path.join(_bases(self.anchor, cwd)[0], self.prefix)

    def matches(self, targets: tuple[str, ...], cwd: str, *, anywhere: bool) -> bool:
        bases = _bases(self.anchor, cwd)
        for target in targets:
            for base in bases:
                rel = _relative(target, base)
                if rel is not None and self.regex.match(rel):
                    return True
            if anywhere and self.floating and self.regex.match(target.lstrip("/")):
                return True
        return False


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


@dataclass(frozen=True)
class PatternUnion:
    """Whether any of several patterns matches, with one regex per anchor: a decision
    checks every path a command touches against every deny and ask path rule, and most
    paths match none. Same answer as any(p.matches(targets, cwd, anywhere=True))."""

    anchored: tuple[tuple[Anchor, re.Pattern[str]], ...]
    floating: re.Pattern[str] | None

    def matches(self, targets: tuple[str, ...], cwd: str) -> bool:
        for anchor, regex in self.anchored:
            bases = _bases(anchor, cwd)
            for target in targets:
                for base in bases:
                    rel = _relative(target, base)
                    if rel is not None and regex.match(rel):
                        return True
        if self.floating is not None:
            return any(self.floating.match(target.lstrip("/")) for target in targets)
        return False


def union_of(patterns: Sequence[PathPattern]) -> PatternUnion:
    def joined(members: list[PathPattern]) -> re.Pattern[str]:
        # pathspec names a group in each regex; names may not repeat in one regex
        return re.compile("|".join(
            f"(?:{_NAMED_GROUP.sub('(?:', p.regex.pattern)})" for p in members))

    by_anchor: dict[Anchor, list[PathPattern]] = {}
    for pattern in patterns:
        by_anchor.setdefault(pattern.anchor, []).append(pattern)
    floating = [p for p in patterns if p.floating]
    return PatternUnion(tuple((a, joined(ps)) for a, ps in by_anchor.items()),
                        joined(floating) if floating else None)


LINK_SEARCH_BUDGET_S = 2.0
"""Time for all of one decision's searches for other names of hard-linked files, from the
decision's start (the shell analysis has the same budget, from the same start). Past it a
file with other names is one whose names could not all be searched: the rules cannot tell."""


@dataclass
class _Walk:
    """One bounded walk of a set of roots: every regular file seen, by inode. A decision's
    searches share it, so a command naming 60 hard-linked files walks once, not 60 times."""

    by_inode: dict[int, list[str]]
    complete: bool


@dataclass
class Lookup:
    """What one decision looks up on disk, and the environment it is handed (the evaluator
    reads none of its own). Made fresh for each decision and dropped after it: a symlink or
    link may change between two decisions, and each resolves them anew (within one, the
    first resolution is the one used)."""

    environ: Mapping[str, str]
    """The variables a Bash command inherits; its HOME is what `~` stands for."""
    deadline: float
    """When the decision's hard-link searches stop."""
    bases: dict[tuple[Anchor, str], tuple[str, ...]] = field(default_factory=dict)
    """Anchors resolved: a decision checks dozens of rules against the same two or three
    directories, and resolving one costs a system call per path component."""
    walks: dict[tuple[str, ...], _Walk] = field(default_factory=dict)
    project_root: str = ""
    """The directory the session started in ('' unknown: cwd stands for it)."""

    @cached_property
    def home(self) -> str:
        """HOME, else the password database's entry (looked up only when `~` is used)."""
        return self.environ.get("HOME") or account_home()


_LOOKUP: ContextVar[Lookup | None] = ContextVar("agent_gateway_lookup", default=None)


def account_home() -> str:
    """The user's home directory from the password database: what `~` stands for when the
    caller gives none (never $HOME: the environment is gateway.env's to read)."""
    return password_home() or "/"


def password_home() -> str | None:
    """The password database's entry for this user's home directory, None without one."""
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None


@contextmanager
def deciding(environ: Mapping[str, str] | None = None, link_budget_s: float | None = None,
             project_root: str = "") -> Iterator[Lookup]:
    """One decision's lookups in `environ` (none given: an empty one); its hard-link
    searches get `link_budget_s` from now; `/x` patterns are under `project_root`."""
    environ = {} if environ is None else environ
    budget = LINK_SEARCH_BUDGET_S if link_budget_s is None else link_budget_s
    lookup = Lookup(environ, time.monotonic() + budget, project_root=project_root)
    token = _LOOKUP.set(lookup)
    try:
        yield lookup
    finally:
        _LOOKUP.reset(token)


def _lookup() -> Lookup:
    """The decision under way's, or (outside one) a throwaway one."""
    return _LOOKUP.get() or Lookup({}, time.monotonic() + LINK_SEARCH_BUDGET_S)


def decision_home() -> str:
    """The home directory `~` stands for in the decision under way."""
    return _lookup().home


def decision_variable(name: str) -> str | None:
    """A variable of the environment the decision under way was handed, or None."""
    return _lookup().environ.get(name)


def expand_user(path: str) -> str:
    """`~` and `~/x` under the decision's home; `~name` from the password database."""
    if path == "~" or path.startswith("~/"):
        return expand_home(path, _lookup().home)
    return expand_home(path, None)


def expand_home(path: str, home: str | None) -> str:
    """`~` and `~/x` under `home` (left as they are when None); `~name` from the password
    database (as bash does)."""
    if path == "~":
        return path if home is None else home
    if path.startswith("~/"):
        return path if home is None else home.rstrip("/") + path[1:]
    if not path.startswith("~"):
        return path
    name, slash, rest = path[1:].partition("/")
    try:  # `~name`: that user's home, from the password database (as bash does)
        return pwd.getpwnam(name).pw_dir.rstrip("/") + slash + rest if slash else (
            pwd.getpwnam(name).pw_dir)
    except KeyError:
        return path


def _bases(anchor: Anchor, cwd: str) -> tuple[str, ...]:
    if anchor == "abs":
        return ("/",)
    lookup = _lookup()
    found = lookup.bases.get((anchor, cwd))
    if found is None:
        if anchor == "home":
            base = lookup.home
        elif anchor == "root":
            base = lookup.project_root or cwd or "/"
        else:
            base = cwd or "/"
        real = os.path.realpath(base)
        found = (base,) if real == base else (base, real)
        if len(lookup.bases) < 64:
            lookup.bases[(anchor, cwd)] = found
    return found


def _relative(target: str, base: str) -> str | None:
    if base == "/":
        return target.lstrip("/")
    base = base.rstrip("/")
    if target == base:
        return ""
    return target[len(base) + 1 :] if target.startswith(base + "/") else None


def compile_path_pattern(content: str, *, fold_case: bool = False) -> PathPattern:
    """Compile the text inside `Read(...)`/`Edit(...)`; ValueError says what is wrong.
    `fold_case`: match any case of the letters (the name a case-insensitive filesystem,
    macOS's default, gives the same file)."""
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern  # compile time only

    anchor: Anchor
    if content.startswith("//"):
        anchor, body = "abs", "/" + content[2:].lstrip("/")
    elif content == "~" or content.startswith("~/"):
        anchor, body = "home", "/" + (content[2:] or "**")
    elif content.startswith("/"):
        anchor, body = "root", content
    elif content.startswith("./"):
        anchor, body = "cwd", "/" + content[2:]
    else:
        anchor, body = "cwd", content
    if not body.strip("/"):
        body = "/**"
    try:
        regex, include = GitIgnoreSpecPattern.pattern_to_regex(body)
    except Exception as exc:  # pathspec raises several types for bad globs
        raise ValueError(f"bad path pattern {content!r}: {exc}") from None
    if regex is None or not include:
        raise ValueError(f"bad path pattern {content!r}: negations are not supported")
    # `*.env`, `**/.env` and `**/.git/config` match at any depth, outside cwd too
    floating = not body.startswith("/") and (
        body.startswith("**/") or "/" not in body.rstrip("/"))
    literal = re.split(r"[*?\[]", body.lstrip("/"), maxsplit=1)[0]
    prefix = literal.rsplit("/", 1)[0] if "/" in literal else ""
    if fold_case:
        regex = f"(?i:{regex})"  # scoped, so a union of patterns keeps it per pattern
    return PathPattern(anchor, re.compile(regex), floating, content, prefix)


class Targets(NamedTuple):
    """The names a path goes by: as written, with symlinks resolved, and other hard links."""

    names: tuple[str, ...]
    complete: bool = True
    """False when the file has other names the bounded search could not finish looking for:
    whether one of them is protected cannot be told."""


def path_targets(raw: str, cwd: str, link_roots: tuple[str, ...] = ()) -> Targets:
    """The path as written (normalized), with symlinks resolved, and, for a file with more
    than one hard link, its other names under `link_roots` (the same inode is the same
    secret whatever it is called)."""
    raw = raw.split("\0", 1)[0]  # the name a program is handed ends at a NUL
    expanded = expand_user(raw)
    if not os.path.isabs(expanded):
        expanded = os.path.join(cwd or "/", expanded)
    lexical = "/" + os.path.normpath(expanded).lstrip("/")
    real = os.path.realpath(lexical)
    found: tuple[str, ...] = (lexical,) if real == lexical else (lexical, real)
    if not link_roots:
        return Targets(found)
    others = hard_link_names(real, link_roots)
    return Targets(found + others.names, others.complete)


def has_other_links(path: str) -> bool:
    """Whether `path` is a regular file with more than one name (hard links)."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    return info.st_nlink >= 2 and stat.S_ISREG(info.st_mode)


MAX_LINK_SEARCH = 20_000
"""Directory entries looked at when searching for another name of a hard-linked file."""


def hard_link_names(path: str, roots: tuple[str, ...]) -> Targets:
    """Other names of `path` (same device and inode) under `roots`, bounded: `complete` is
    False when the entry budget or the decision's time ran out before every root was
    searched."""
    try:
        info = os.stat(path)
    except OSError:
        return Targets(())
    if info.st_nlink < 2 or not stat.S_ISREG(info.st_mode):
        return Targets(())
    walk = _walked(roots)
    found: list[str] = []
    for candidate in walk.by_inode.get(info.st_ino, ()):
        if candidate == path:
            continue
        try:
            seen = os.stat(candidate, follow_symlinks=False)
        except OSError:
            continue
        if seen.st_dev == info.st_dev and seen.st_ino == info.st_ino:
            found.append(candidate)
    return Targets(tuple(found), walk.complete)


def _walked(roots: tuple[str, ...]) -> _Walk:
    lookup = _lookup()
    walk = lookup.walks.get(roots)
    if walk is None:
        walk = _walk(roots, lookup.deadline)
        if len(lookup.walks) < 64:
            lookup.walks[roots] = walk
    return walk


def _walk(roots: tuple[str, ...], deadline: float) -> _Walk:
    by_inode: dict[int, list[str]] = {}
    budget = MAX_LINK_SEARCH
    # A stack holding the roots in reverse: the first root (the session's directory, where a
    # project's secrets are) is searched whole before the budget goes to the next one.
    pending = [r for r in reversed(dict.fromkeys(roots)) if os.path.isdir(r)]
    while pending and budget > 0 and time.monotonic() < deadline:
        directory = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            budget -= 1
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != ".git":
                        pending.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    # The directory entry carries the inode: only a candidate costs a stat.
                    by_inode.setdefault(entry.inode(), []).append(entry.path)
            except OSError:
                continue
    return _Walk(by_inode, complete=not pending)


def glob_in(pattern: str, cwd: str, limit: int = 256) -> list[str]:
    """Names a glob expands to in `cwd` now (bash's rules: dotfiles only for a leading dot);
    [] when none (bash then passes the pattern itself)."""
    import glob as globbing

    try:
        found = globbing.glob(expand_user(pattern), root_dir=cwd or "/")
    except (OSError, ValueError):
        return []
    return found[:limit]
