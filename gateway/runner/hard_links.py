"""Other names (hard links) of the files a policy keeps unread, for the OS sandbox to mask.

Claude Code's sandbox masks a denied file by its path: a hard link made before the session
under an innocent name (`data/notes.txt`, the same inode as `.env`) is another path to the same
bytes, and the sandbox leaves it readable (measured with 2.1.332 and bubblewrap: `base64
$(find . -name notes.txt)` and `grep -r TOKEN .` printed the secret). Inside the sandbox no new
link to a masked file can be made (`ln .env x`: cross-device), so the links that matter exist
when the session starts: `run` looks for them once, in the session's directory and each Read
deny rule's own directory, and masks every other name it finds.

A denied file with more names than the search found has a name elsewhere the sandbox cannot be
told about; the search is then incomplete, and so is one that ran out of its budget.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass

from gateway.env import environment
from gateway.policy.builtin import UNSEARCHED
from gateway.policy.compiled import PathRule, Policy
from gateway.policy.paths import PathPattern, PatternUnion, deciding, union_of

MAX_ENTRIES = 500_000
"""Directory entries looked at (about 0.1 s per 50,000 on the 2-core machine)."""


@dataclass(frozen=True)
class LinkedNames:
    names: tuple[str, ...] = ()
    """Other names of denied files, absolute; none of them denied by name."""
    incomplete: str = ""
    """Why a denied file may have a name the search did not find ('' when it found all)."""


def read_denied_patterns(policy: Policy) -> list[PathPattern]:
    """The enforced Read deny path rules of every layer (the built-in secrets included)."""
    patterns: list[PathPattern] = []
    for layer in policy.layers:
        if layer.mode != "enforce":
            continue
        for rule in layer.by_tool.get("Read", ()):
            if (rule.decision == "deny" and not rule.monitor
                    and isinstance(rule.matcher, PathRule)
                    and not rule.id.startswith(UNSEARCHED)):  # see root_patterns
                patterns.append(rule.matcher.pattern)
    return patterns


def linked_names(policy: Policy, cwd: str, budget: int = MAX_ENTRIES) -> LinkedNames:
    """Every other name, under the session's directory and the rules' own directories, of a
    file a Read deny rule names."""
    with deciding(environment()):
        return _linked_names(policy, cwd, budget)


def _linked_names(policy: Policy, cwd: str, budget: int) -> LinkedNames:
    patterns = read_denied_patterns(policy)
    if not patterns:
        return LinkedNames()
    union = union_of(patterns)
    named = _DeniedNames(union, cwd)
    roots = [r for r in dict.fromkeys([cwd, *(p.search_root(cwd) for p in patterns)])
             if os.path.isdir(r)]
    by_inode: dict[int, list[str]] = {}
    denied: list[str] = []
    pending = list(reversed(roots))
    seen_dirs: set[str] = set()
    while pending:
        directory = pending.pop()
        if directory in seen_dirs:
            continue  # one root under another
        seen_dirs.add(directory)
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        budget -= len(entries)
        if budget < 0:
            return LinkedNames(incomplete=f"more than {MAX_ENTRIES} files to search for "
                               "hard links to denied files")
        denied_here = named.in_directory(directory)
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    by_inode.setdefault(entry.inode(), []).append(entry.path)
                    if denied_here(entry.name):
                        denied.append(entry.path)
            except OSError:
                continue
    return _other_names(denied, by_inode, union, cwd)


def _other_names(denied: list[str], by_inode: dict[int, list[str]], union: PatternUnion,
                 cwd: str) -> LinkedNames:
    names: list[str] = []
    for path in denied:
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if info.st_nlink < 2 or not stat.S_ISREG(info.st_mode):
            continue
        same = [p for p in by_inode.get(info.st_ino, ()) if _same_file(p, info)]
        if len(same) < info.st_nlink:
            return LinkedNames(incomplete=f"{path} has {info.st_nlink} names, "
                               f"{info.st_nlink - len(same)} of them outside the directories "
                               "searched")
        names.extend(p for p in same if not union.matches((p,), cwd))
    return LinkedNames(tuple(dict.fromkeys(names)))


class _DeniedNames:
    """`union.matches` for every file of a directory, the directory's part worked out once
    (a search looks at every file under the session's directory)."""

    def __init__(self, union: PatternUnion, cwd: str) -> None:
        self.floating = union.floating
        self.anchored: list[tuple[str, re.Pattern[str]]] = []
        for anchor, regex in union.anchored:
            base = {"abs": "/", "home": os.path.expanduser("~")}.get(anchor, cwd or "/")
            for form in dict.fromkeys((base, os.path.realpath(base))):
                self.anchored.append((form.rstrip("/") + "/", regex))

    def in_directory(self, directory: str) -> Callable[[str], bool]:
        prefix = directory.rstrip("/") + "/"
        relative = [(prefix[len(base):], regex) for base, regex in self.anchored
                    if prefix.startswith(base)]
        floating, whole = self.floating, prefix.lstrip("/")

        def denied(name: str) -> bool:
            for rel, regex in relative:
                if regex.match(rel + name):
                    return True
            return floating is not None and floating.match(whole + name) is not None

        return denied


def _same_file(path: str, info: os.stat_result) -> bool:
    try:
        other = os.lstat(path)
    except OSError:
        return False
    return other.st_ino == info.st_ino and other.st_dev == info.st_dev
