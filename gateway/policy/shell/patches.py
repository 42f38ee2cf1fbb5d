"""Patches, as data: which files `patch`, `git apply` and `git am` write, by the names the
patch's headers give (`--- a/x`, `+++ b/x`, `diff --git`, renames), less the leading
directories `-p` strips, under `-d`/`--directory`. Pure: the patch text is the caller's (a
here-document, a file on disk); without it, anything under the directory may be written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.policy.shell.words import Word

_HEADER = re.compile(r"^(?:\+\+\+|---|\*\*\*) (?!\*)(.+?)(?:\t.*)?$"
                     r"|^(?:rename|copy) (?:from|to) (.+)$|^Index: (.+)$", re.M)
_GIT_HEADER = re.compile(r"^diff --git (\S+) (\S+)$", re.M)
_NO_FILE = frozenset({"/dev/null", "nul"})
STRIP_UNKNOWN = -1


@dataclass
class PatchRun:
    """What one `patch`, `git apply` or `git am` is told."""

    source: Word | None = None
    """The patch file; None: its input."""
    base: Word = field(default_factory=lambda: Word("."))
    """The directory the patch's names are under."""
    strip: int | None = 1
    """Leading directories -p strips; None: patch's default (the last name);
    STRIP_UNKNOWN: computed at run time."""
    targets: list[Word] = field(default_factory=list)
    """Files the command line names for it to write (patch ORIGFILE, -o OUTFILE)."""
    writes: bool = True
    """False when it only checks (--dry-run, --check, --stat)."""


_PATCH_VALUES = frozenset(("-F", "--fuzz", "-z", "--suffix", "-B", "--prefix", "-Y",
                           "--basename-prefix", "-V", "--version-control", "-D", "--ifdef",
                           "-r", "--reject-file", "--quoting-style", "-g", "--get"))
_GIT_APPLY_VALUES = frozenset(("-C", "--whitespace", "--exclude", "--include",
                               "--build-fake-ancestor", "--reject-file"))
_CHECKS = frozenset(("--dry-run", "--check", "--stat", "--numstat", "--summary"))


def patch_run(name: str, argv: Sequence[Word]) -> PatchRun:
    """`argv`: the options and operands after `patch` or after `git apply|am`."""
    run = PatchRun(strip=None if name == "patch" else 1)
    operands: list[Word] = []
    texts = [w.text for w in argv]
    i = 0
    while i < len(argv):
        word, text = argv[i], texts[i]
        following = argv[i + 1] if i + 1 < len(argv) else None
        i += 1
        option, eq, value = text.partition("=")
        given = Word(value, dynamic=word.dynamic) if eq else following
        if text.startswith("-p") and len(text) > 2 and not word.dynamic:
            run.strip = int(text[2:]) if text[2:].isdigit() else STRIP_UNKNOWN
        elif option in ("-p", "--strip") and given is not None:
            run.strip = int(given.text) if given.text.isdigit() and not given.dynamic else (
                STRIP_UNKNOWN)
            i += 0 if eq else 1
        elif option in ("-d", "--directory") and given is not None:
            run.base = given
            i += 0 if eq else 1
        elif option in ("-i", "--input") and name == "patch" and given is not None:
            run.source = given
            i += 0 if eq else 1
        elif option in ("-o", "--output") and name == "patch" and given is not None:
            run.targets.append(given)
            i += 0 if eq else 1
        elif option in _CHECKS or (option == "--cached" and name != "patch"):
            run.writes = False  # it checks, or applies to git's index only
        elif option in (_PATCH_VALUES if name == "patch" else _GIT_APPLY_VALUES) and not eq:
            i += 1
        elif not text.startswith("-") or text == "-":
            operands.append(word)
    if name == "patch":  # patch [ORIGFILE [PATCHFILE]]
        run.targets += operands[:1]
        if len(operands) > 1 and run.source is None:
            run.source = operands[1]
    elif operands and operands[0].text != "-":
        run.source = operands[0]  # the first; others are read as it reads this one
    if run.source is not None and run.source.text == "-":
        run.source = None
    return run


def patched_names(text: str, strip: int | None) -> list[str]:
    """The files a patch's headers name, as the command finds them."""
    raw: list[str] = []
    for match in _HEADER.finditer(text):
        name = next(g for g in match.groups() if g is not None).strip().strip('"')
        if name and name.lower() not in _NO_FILE:
            raw.append(name)
    for match in _GIT_HEADER.finditer(text):
        raw += [match.group(1), match.group(2)]
    strips = range(4) if strip == STRIP_UNKNOWN else [strip]
    out: list[str] = []
    for name in dict.fromkeys(raw):
        for level in strips:
            out += _stripped(name, level)
    return list(dict.fromkeys(out))


def _stripped(name: str, strip: int | None) -> list[str]:
    """`name` less `strip` leading directories; patch's default (no -p): the last name, or,
    where the file is found by its full name or with one directory less, those too."""
    parts = [p for p in name.split("/") if p]
    if strip is None:
        return ["/".join(parts), "/".join(parts[1:]) or parts[-1], parts[-1]] if parts else []
    if len(parts) <= strip:
        return []
    return ["/".join(parts[strip:])]
