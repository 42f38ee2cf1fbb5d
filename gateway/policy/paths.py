"""Path rules for Read/Edit-family tools: gitignore-style globs anchored as Claude Code does.

`//abs/**` is absolute, `~/x` is under the home directory, `/x` is under the project root
(the session's cwd), and `x` or `./x` is relative to cwd (unanchored gitignore patterns such as
`*.env` or `**/.env` match at any depth). Targets are normalized (`~`, `..`, relative to cwd)
and checked both as written and with symlinks resolved.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal

Anchor = Literal["abs", "home", "root", "cwd"]


@dataclass(frozen=True)
class PathPattern:
    anchor: Anchor
    regex: re.Pattern[str]
    floating: bool
    """An unanchored pattern (`*.env`): deny and ask rules also apply outside cwd."""
    source: str

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


def _bases(anchor: Anchor, cwd: str) -> tuple[str, ...]:
    if anchor == "abs":
        return ("/",)
    base = os.path.expanduser("~") if anchor == "home" else (cwd or "/")
    real = os.path.realpath(base)
    return (base,) if real == base else (base, real)


def _relative(target: str, base: str) -> str | None:
    if base == "/":
        return target.lstrip("/")
    base = base.rstrip("/")
    if target == base:
        return ""
    return target[len(base) + 1 :] if target.startswith(base + "/") else None


def compile_path_pattern(content: str) -> PathPattern:
    """Compile the text inside `Read(...)`/`Edit(...)`; ValueError says what is wrong."""
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
    floating = not body.startswith("/") and "/" not in body.rstrip("/").removeprefix("**/")
    return PathPattern(anchor, re.compile(regex), floating, content)


def path_targets(raw: str, cwd: str) -> tuple[str, ...]:
    """The path as written (normalized) and, where it differs, with symlinks resolved."""
    expanded = os.path.expanduser(raw)
    if not os.path.isabs(expanded):
        expanded = os.path.join(cwd or "/", expanded)
    lexical = "/" + os.path.normpath(expanded).lstrip("/")
    real = os.path.realpath(lexical)
    return (lexical,) if real == lexical else (lexical, real)
