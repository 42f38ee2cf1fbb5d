"""Operands a command acts on as whole trees: recursive options (grep -r, cp -R, chmod -R,
rm -r) and programs that always recurse (rg, tar, mv); what a recursive search reads (its
--include and -g globs, hidden files or not), as names only known when it runs."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.policy.shell.filetable import FileUse, Mode
from gateway.policy.shell.words import Word

_RECURSIVE_ALWAYS = frozenset(["rg", "ag", "ack", "tar", "7z", "7za", "7zz", "mv"])
"""Programs that act on everything under a directory operand whatever their options (tar
unless --no-recursion; mv moves the whole tree)."""
_RECURSIVE_OPTIONS: dict[str, tuple[frozenset[str], str]] = {
    **dict.fromkeys(("grep", "egrep", "fgrep"), (frozenset((
        "--recursive", "--dereference-recursive", "--directories=recurse")), "rR")),
    "cp": (frozenset(("--recursive", "--archive")), "rRa"),
    "rsync": (frozenset(("--recursive", "--archive")), "ra"),
    "scp": (frozenset(), "r"),
    "zip": (frozenset(("--recurse-paths",)), "rR"),
    "diff": (frozenset(("--recursive",)), "r"),
    "rm": (frozenset(("--recursive",)), "rR"),
    **dict.fromkeys(("chmod", "chown", "chgrp"), (frozenset(("--recursive",)), "R")),
}
"""Programs that act on everything under a directory operand given one of these options
(long, or short letters alone or in a cluster: `-rn`)."""
_SEARCHERS = frozenset(["grep", "egrep", "fgrep", "rg", "ag", "ack"])
"""Recursive searchers search the working directory when given no path."""


def recursive(name: str, use: FileUse, words: Sequence[Word]) -> bool:
    """Whether the command acts on whole trees under its directory operands."""
    if name in _RECURSIVE_ALWAYS:
        return not any(w.text == "--no-recursion" for w in words[1:])
    options = _RECURSIVE_OPTIONS.get(name)
    if options is None:
        return False
    longs, letters = options
    for i, word in enumerate(words[1:], start=1):
        text = word.text
        if text == "--":
            break
        if text in longs or (text in ("-d", "--directories") and i + 1 < len(words)
                             and words[i + 1].text == "recurse"):
            return True
        if text.startswith("-") and not text.startswith("--"):
            for letter in text[1:]:
                if letter in letters:
                    return True
                if use.takes_value(f"-{letter}"):
                    break  # the rest of the cluster is that option's value
    return False


def trees(name: str, use: FileUse, words: Sequence[Word], operands: list[Word],
          named: list[tuple[Mode, Word]], pattern_given: bool) -> list[tuple[Mode, Word]]:
    """What a recursive command acts on beyond its operands: everything under each one
    (`grep -r TOKEN .` reads ./.env, `rm -rf .github` removes its workflows), and where a
    copied tree lands, all of it. A searcher given no path searches `.`."""
    files = operands if pattern_given or use.operands not in (
        "pattern-then-read", "script-then-read", "value-then-write") else operands[1:]
    visible = name in ("rg", "ag") and not _hidden_too(name, words)
    only = _searched_names(name, words)
    if name in _SEARCHERS and not files:
        return [("read", tree(Word("."), visible, glob)) for glob in only]
    given = {id(w) for w in operands}
    if name in ("cp", "mv", "rsync", "scp") and operands:
        # The destination holds what lands inside it (its `_inside` words), not all of it;
        # rsync --delete removes what is there.
        if not any(w.text.startswith("--delete") for w in words[1:]):
            given.discard(id(operands[-1]))
        given |= {id(w) for mode, w in named if mode == "write"} - {id(operands[-1])}
    return [(mode, tree(w, visible, glob)) for mode, w in named
            if not w.dynamic and id(w) in given for glob in only]


def _searched_names(name: str, words: Sequence[Word]) -> list[str]:
    """The base names a recursive search reads (`grep -r --include='*.py'`, `rg -g '*.py'`:
    those only; a glob computed at run time, or none given: any)."""
    options = {"grep": ("--include",), "egrep": ("--include",), "fgrep": ("--include",),
               "rg": ("-g", "--glob", "--iglob")}.get(name, ())
    globs: list[str] = []
    for i, word in enumerate(words[1:], start=1):
        opt, eq, value = word.text.partition("=")
        if opt not in options:
            continue
        if not eq:
            if i + 1 >= len(words):
                continue
            word = words[i + 1]
            value = word.text
        if word.dynamic or value.startswith("!") or "/" in value or opt == "--iglob":
            return ["*"]  # an exclusion, a path glob, a case-blind one: any name may be read
        globs.append(value)
    return globs or ["*"]


def _hidden_too(name: str, words: Sequence[Word]) -> bool:
    """Whether rg or ag reads hidden files too (by default they skip them: `rg TOKEN .`
    does not read ./.env)."""
    texts = [w.text for w in words[1:]]
    if "--hidden" in texts or "--unrestricted" in texts or "-." in texts:
        return True
    short = "".join(t[1:] for t in texts if t.startswith("-") and not t.startswith("--"))
    return short.count("u") >= (2 if name == "rg" else 1) or "." in short


def tree(word: Word, visible: bool = False, glob: str = "*") -> Word:
    """Everything under `word` whose name matches `glob` (`visible`: and does not begin
    with a dot), a name only known when the command runs."""
    last = "" if glob == "*" and not visible else "/" + (
        "[!.]" + glob if visible and glob.startswith("*") else glob)
    below = f"{word.text.rstrip('/')}/**{last}"
    return Word(word.text, dynamic=True, lead_dynamic=word.lead_dynamic, globby=word.globby,
                pattern=below, tree=True)
