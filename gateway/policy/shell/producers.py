"""What `echo` and `printf` print when every argument is literal: the only producers whose
output a shell may be fed and still be analysed (`echo 'rm x' | sh`). And the directories
the substitutions agents `cd` into print (`cd "$(mktemp -d)"`)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence

from gateway.policy.shell.words import Word, decode_ansi_c

_CONVERSION = re.compile(r"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?([a-zA-Z%])")


def literal_output(name: str, words: Sequence[Word], runs_other: bool) -> str | None:
    """The bytes `words` (the argv, name first) write to stdout, or None when not known."""
    if runs_other or any(w.dynamic or w.globby for w in words):
        return None
    texts = [w.text for w in words[1:]]
    if name == "echo":
        return _echo(texts)
    if name == "printf" and texts:
        if texts[0] == "--":
            texts = texts[1:]
        if not texts or texts[0] == "-v":
            return "" if texts else None
        return _printf(texts[0], texts[1:])
    return None


def _echo(texts: list[str]) -> str | None:
    flags: set[str] = set()
    while texts and len(texts[0]) > 1 and texts[0][0] == "-" and set(texts[0][1:]) <= set("neE"):
        flags.update("-" + c for c in texts[0][1:])
        texts = texts[1:]
    body = " ".join(texts)
    end = "" if "-n" in flags else "\n"
    decoded = _escapes(body)
    if "-e" in flags:
        return decoded + end
    # Plain echo leaves backslashes alone, unless the shell runs with xpg_echo: both readings.
    return body + end if decoded == body else body + "\n" + decoded + end


def _escapes(text: str) -> str:
    cut = text.find("\\c")
    if cut >= 0:
        text = text[:cut]
    return decode_ansi_c(re.sub(r"\\0([0-7]{0,3})", lambda m: "\\" + (m.group(1) or "0"), text),
                         keep_nul=True)


def _printf(fmt: str, args: list[str]) -> str | None:
    pieces: list[str] = []
    remaining = list(args)
    for _ in range(1 + len(args)):
        position = 0
        used = 0
        for found in _CONVERSION.finditer(fmt):
            pieces.append(_escapes(fmt[position : found.start()]))
            position = found.end()
            conversion = found.group(4)
            if conversion == "%":
                pieces.append("%")
                continue
            if found.group(2) == "*" or found.group(3) == "*" or conversion not in "sbqdic":
                return None
            value = remaining.pop(0) if remaining else ""
            used += 1
            pieces.append(_escapes(value) if conversion == "b" else value)
        pieces.append(_escapes(fmt[position:]))
        if not remaining or used == 0:
            break
    return "".join(pieces)


_MKTEMP_DIRECTORY = re.compile(
    r"\$\(\s*mktemp((?:\s+(?:-d|--directory|-t|-q|--quiet|-p\s+[\w./-]+|--tmpdir=[\w./-]+"
    r"|[\w.-]*XXX[\w.-]*))*)\s*\)")
_TOP_LEVEL = re.compile(r"\$\(\s*git\s+rev-parse\s+--show-toplevel\s*\)")
_PWD = re.compile(r"\$\(\s*pwd\s*\)|`\s*pwd\s*`")


def produced_form(text: str) -> bool:
    """Whether `text` is a substitution whose output `produced_directories` knows."""
    return any(form.fullmatch(text) for form in (_PWD, _TOP_LEVEL, _MKTEMP_DIRECTORY))


def produced_directories(text: str, cwds: Sequence[str],
                         values: Callable[[str], list[str] | None], *,
                         files: bool = False) -> list[str] | None:
    """The directories a `cd` target that is one of these substitutions may name; None for
    any other: `$(mktemp -d)` a new one under the temporary directory (empty: no file in it
    is protected; `files`: `$(mktemp)` too), `$(pwd)` where the command is, `$(git rev-parse
    --show-toplevel)` one of the directories above it. `values(NAME)`: what a variable may
    hold when it runs (the command's own bindings and the environment; [] unset, None
    unknown)."""
    if _PWD.fullmatch(text):
        return list(cwds)
    if _TOP_LEVEL.fullmatch(text):
        if values("GIT_DIR") != [] or values("GIT_WORK_TREE") != []:
            return None  # the work tree is where they say
        found: list[str] = []
        for cwd in cwds:
            here = cwd
            while True:
                found.append(here)
                parent = os.path.dirname(here)
                if parent == here:
                    break
                here = parent
        return found
    made = _MKTEMP_DIRECTORY.fullmatch(text)
    if made is None or not (files or re.search(r"\s(-d|--directory)\b", made.group(1))):
        return None
    argv = [Word("mktemp"), *(Word(t) for t in made.group(1).split())]
    paths = mktemp_made(argv, values("TMPDIR"))
    if paths is None:
        return None
    # a relative template or TMPDIR is under the directory mktemp runs in
    return [p.text if p.text.startswith(("/", "~")) else os.path.join(cwd, p.text)
            for p in paths for cwd in ([""] if p.text.startswith(("/", "~")) else cwds)]


def mktemp_made(words: Sequence[Word], tmpdirs: list[str] | None) -> list[Word] | None:
    """Where `mktemp` (argv `words`) makes its file or directory: the template as given
    (relative to the working directory), or under `-p DIR`/`--tmpdir=DIR`, or, with -t,
    `--tmpdir` or no template, under TMPDIR (`tmpdirs`: its values; None unknown)."""
    template, given, under_tmp = None, None, False
    i = 1
    while i < len(words):
        word = words[i]
        i += 1
        option, _, value = word.text.partition("=")
        if option == "--tmpdir":
            given, under_tmp = (Word(value, dynamic=word.dynamic) if value else None), True
        elif word.text == "-p":
            given, under_tmp = (words[i] if i < len(words) else None), True
            i += 1
        elif word.text.startswith("-p"):
            given, under_tmp = Word(word.text[2:], dynamic=word.dynamic), True
        elif word.text == "-t":
            under_tmp = True
        elif word.text == "--suffix":
            i += 1
        elif not word.text.startswith("-"):
            template = word
    if template is not None and not under_tmp:
        return [template]
    name = template.text if template is not None else "tmp.XXXXXXXXXX"
    dynamic = template is not None and template.dynamic
    if given is not None:
        return [Word(os.path.join(given.text, name), dynamic=dynamic or given.dynamic)]
    if tmpdirs is None:
        return None
    return [Word(os.path.join(base or "/tmp", name), dynamic=dynamic) for base in tmpdirs or [""]]
