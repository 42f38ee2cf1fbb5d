"""What `find` selects, and what it does with it: the commands -exec runs, -delete, the
paths it prints (for `find ... | xargs CMD`).

A file find selects is only known when it runs, but its name is not: the tests before an
action bound it (`-name '*.o'`: a name ending in .o under a start point; `-path`,
`-maxdepth`). The selection is a Word whose `pattern` says so; with tests it cannot read
(`-o`, `!`, `-regex`, `-L`) a selected file may be any file under the start points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.policy.shell.globs import ANY, crossing
from gateway.policy.shell.words import Word

EXEC_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_PRINTS = frozenset({"-print", "-print0", "-printf", "-ls", "-fprint", "-fprint0",
                     "-fprintf", "-fls"})
_OPERATORS = frozenset({"-o", "-or", "!", "-not", "(", ")", ","})
_LEADING = frozenset({"-H", "-L", "-P"})
_FOLLOWS = frozenset({"-L", "-follow"})
_UNBOUNDED = frozenset({"-files0-from", "-samefile", "-inum"})
"""Start points from a file; tests that select another name of a file (a hard link)."""
_ONE_VALUE = frozenset({
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
    "-lname", "-ilname", "-type", "-xtype", "-maxdepth", "-mindepth", "-newer", "-perm",
    "-size", "-user", "-group", "-uid", "-gid", "-mtime", "-mmin", "-atime", "-amin",
    "-ctime", "-cmin", "-used", "-links", "-inum", "-samefile", "-fstype", "-regextype",
    "-printf", "-fprint", "-fprint0", "-fls", "-context", "-newerXY", "-anewer", "-cnewer",
    "-files0-from",
})
_TWO_VALUES = frozenset({"-fprintf"})


@dataclass
class FindRun:
    """What one find invocation does with the files it selects."""

    commands: list[list[Word]] = field(default_factory=list)
    """-exec/-execdir/-ok argvs, each `{}` replaced by the selection."""
    deletes: list[Word] = field(default_factory=list)
    prints: list[Word] = field(default_factory=list)
    """What it writes to stdout, one Word per start point (the default action is -print)."""


def analyse_find(words: Sequence[Word]) -> FindRun:
    """`words` is find's argv, name first."""
    run = FindRun()
    i = 1
    follows = False
    while i < len(words) and (words[i].text in _LEADING or words[i].text == "-D"
                              or words[i].text.startswith("-O")):
        text = words[i].text
        follows = follows or text == "-L"
        i += 2 if text == "-D" else 1
    roots: list[Word] = []
    while i < len(words) and not _expression_start(words[i]):
        roots.append(words[i])
        i += 1
    roots = roots or [Word(".")]
    tests: list[tuple[str, Word]] = []
    plain = True  # a conjunction of tests: each bounds what the actions after it see
    acted = False
    while i < len(words):
        word, text = words[i], words[i].text
        if word.dynamic and not acted:
            plain = False
        if text in _OPERATORS or text in _UNBOUNDED:
            plain = False
            i += 1
            continue
        if text in _FOLLOWS:
            follows = True
        if text in EXEC_ACTIONS:
            end = i + 1
            while end < len(words) and words[end].text not in (";", "+"):
                end += 1
            selected = _selection(roots, tests, plain and not follows)
            if len(selected) > 1:  # one {} per start point would shift $1, $2, ...
                selected = [Word("$(find)", dynamic=True)]
            run.commands.append(_with_selection(words[i + 1 : end], selected))
            acted = True
            i = end + 1
            continue
        if text == "-delete":
            run.deletes.extend(_selection(roots, tests, plain and not follows))
            acted = True
        elif text in _PRINTS:
            if text in ("-print", "-print0", "-printf"):
                run.prints.extend(_selection(roots, tests, plain and not follows,
                                             printf=text == "-printf"))
            acted = True
        elif text in ("-quit", "-prune"):
            acted = acted or text == "-quit"
        if text in _ONE_VALUE or text in _TWO_VALUES:
            values = words[i + 1 : i + 1 + (2 if text in _TWO_VALUES else 1)]
            if text in ("-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename",
                        "-maxdepth", "-type") and values:
                tests.append((text, values[0]))
            i += 1 + len(values)
            continue
        i += 1
    if not acted:
        run.prints.extend(_selection(roots, tests, plain and not follows))
    return run


def _expression_start(word: Word) -> bool:
    text = word.text
    return (text.startswith("-") and len(text) > 1) or text in ("!", "(")


def _selection(roots: Sequence[Word], tests: Sequence[tuple[str, Word]], bounded: bool,
               printf: bool = False) -> list[Word]:
    """One Word per start point: the files selected under it, as a pattern."""
    out: list[Word] = []
    for root in roots:
        if root.dynamic or not bounded or printf:
            out.append(Word(f"$(find {root.text})", dynamic=True, lead_dynamic=printf))
            continue
        pattern = _pattern(root.text, tests)
        if _root_selected(root.text, tests):
            # the start point and what is below it, in one word (-exec gets one path)
            pattern = f"{root.text.rstrip('/')}/{ANY}" if pattern else ""
            if not pattern:
                out.append(Word(root.text))
                continue
        out.append(Word(pattern, dynamic=True, pattern=pattern))
    return out


def _root_selected(root: str, tests: Sequence[tuple[str, Word]]) -> bool:
    """Whether the start point itself may pass the tests (find tests it like any file)."""
    import fnmatch

    name = root.rstrip("/").rsplit("/", 1)[-1] or root
    for test, value in tests:
        if value.dynamic:
            continue
        if test == "-name" and not fnmatch.fnmatchcase(name, value.text):
            return False
        if test == "-iname" and not fnmatch.fnmatchcase(name.lower(), value.text.lower()):
            return False
        if test in ("-path", "-wholename") and not fnmatch.fnmatchcase(root, value.text):
            return False
        if test in ("-ipath", "-iwholename") and not fnmatch.fnmatchcase(
                root.lower(), value.text.lower()):
            return False
    return True


def _pattern(root: str, tests: Sequence[tuple[str, Word]]) -> str:
    """The paths find prints below `root` that pass every test ('' when none)."""
    base = root.rstrip("/") or "/"
    depth = None
    name = "*"
    path = ""
    for test, value in tests:
        if value.dynamic:
            continue
        if test == "-maxdepth" and value.text.isdigit():
            depth = int(value.text)
        elif test in ("-name", "-iname"):
            name = _nocase(value.text) if test == "-iname" else value.text
        elif test in ("-path", "-wholename", "-ipath", "-iwholename"):
            path = value.text if test in ("-path", "-wholename") else _nocase(value.text)
    if depth == 0:
        return ""
    if path:
        return crossing(path)
    inner = name if depth == 1 else f"{ANY}/{name}"
    return f"{base}/{inner}" if base != "/" else f"/{inner}"


def _nocase(pattern: str) -> str:
    """A -iname pattern as a case-sensitive one that matches at least as much."""
    out: list[str] = []
    in_class = False
    for char in pattern:
        if char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        if not in_class and char.isalpha() and char.lower() != char.upper():
            out.append(f"[{char.lower()}{char.upper()}]")
        elif in_class and char.isalpha():
            out.append(char.lower() + char.upper())
        else:
            out.append(char)
    return "".join(out)


def _with_selection(argv: Sequence[Word], selected: Sequence[Word]) -> list[Word]:
    """`{}` in an -exec argv becomes the selected file (one start point's selection stands
    for each); a word that only starts with `{}` keeps its suffix."""
    out: list[Word] = []
    for word in argv:
        if "{}" not in word.text:
            out.append(word)
            continue
        for choice in selected[:1]:
            suffix = word.text[2:] if word.text.startswith("{}") else None
            if not choice.dynamic:  # the start point itself
                out.append(Word(word.text.replace("{}", choice.text)))
            elif choice.pattern and suffix is not None and "{}" not in suffix and (
                    not any(c in suffix for c in "*?[")):
                out.append(Word(choice.text + suffix, dynamic=True,
                                pattern=choice.pattern + suffix))
            else:
                # find prints paths starting with the start point: run-time text, not an
                # option (unless -printf shaped it)
                out.append(Word(word.text, dynamic=True, lead_dynamic=choice.lead_dynamic))
    return out
