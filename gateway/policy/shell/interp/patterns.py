"""Many regexes over one large text, fast: each is searched only where it can match.

One alternation of dozens of patterns costs a full scan per pattern at every position. Most
patterns start with a word (`\\beval\\b`, `\\bIO\\s*\\.`), so the identifiers of the text are
collected once and a pattern runs only if its leading word occurs among them. The leading
word is read from the pattern itself and only when that is sound (the word is followed by
something that cannot continue an identifier); other patterns always run, and those start
with a literal symbol, which the regex engine scans for quickly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

Rx = str | tuple[str, ...]
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_LOOKBEHIND = re.compile(r"\(\?<!(?:\[[^\]]*\]|[^()\[\]]+)\)")
_WORD = re.compile(r"[A-Za-z_]\w*")
_ALTERNATIVE = re.compile(r"[A-Za-z_]\w*(?:\\\.\w+)*")
_FOLLOWERS = (r"\b", r"\s", r"\(", r"\.", r"\[", r"\{", "(?!", "(?=", ":", ")", "-")


def branches(rx: Rx) -> tuple[str, ...]:
    return (rx,) if isinstance(rx, str) else rx


def _top_level_alternation(branch: str) -> bool:
    depth, i, in_class = 0, 0, False
    while i < len(branch):
        char = branch[i]
        if char == "\\":
            i += 1
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
        i += 1
    return False


def leading_words(branch: str) -> frozenset[str] | None:
    """The identifiers a match of `branch` must start with, or None when not sure."""
    if _top_level_alternation(branch):
        return None
    rest = branch
    behind = _LOOKBEHIND.match(rest)
    if behind is not None:
        rest = rest[behind.end():]
        rest = rest[2:] if rest.startswith(r"\b") else rest
    elif rest.startswith(r"\b"):
        rest = rest[2:]
    else:
        return None
    if rest.startswith("(?:"):
        end = rest.find(")")
        alternatives = rest[3:end].split("|") if end > 0 else []
        if not alternatives or not all(_ALTERNATIVE.fullmatch(a) for a in alternatives):
            return None
        words = [_WORD.match(a).group(0) for a in alternatives]  # type: ignore[union-attr]
        follower = rest[end + 1:]
    else:
        word = _WORD.match(rest)
        if word is None:
            return None
        words = [word.group(0)]
        follower = rest[word.end():]
    if not follower.startswith(_FOLLOWERS):  # \bNSURL also matches NSURLSession
        return None
    return frozenset(words)


@dataclass(frozen=True)
class Pattern:
    label: str
    regex: re.Pattern[str]
    words: frozenset[str] | None


class Patterns:
    def __init__(self, entries: Iterable[tuple[str, Rx]], flags: int = 0) -> None:
        self.fold = bool(flags & re.I)
        self.items: list[Pattern] = []
        for label, rx in entries:
            for branch in branches(rx):
                words = leading_words(branch)
                if words is not None and self.fold:
                    words = frozenset(w.lower() for w in words)
                self.items.append(Pattern(label, re.compile(branch, flags), words))

    def identifiers(self, text: str) -> frozenset[str]:
        found = IDENTIFIER.findall(text)
        return frozenset(w.lower() for w in found) if self.fold else frozenset(found)

    def live(self, ids: frozenset[str]) -> Iterator[Pattern]:
        for item in self.items:
            if item.words is None or not item.words.isdisjoint(ids):
                yield item

    def search(self, text: str, ids: frozenset[str]) -> tuple[str, re.Match[str]] | None:
        for item in self.live(ids):
            match = item.regex.search(text)
            if match is not None:
                return item.label, match
        return None

    def finditer(self, text: str, ids: frozenset[str]) -> Iterator[re.Match[str]]:
        for item in self.live(ids):
            yield from item.regex.finditer(text)
