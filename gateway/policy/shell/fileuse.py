"""Which files a command reads and writes, from its argv and its program's entry in the
table (filetable.py: what the operands are, which options name files). Redirections are the
scanner's; code inside awk, sed and interpreters reports its own files. A program not listed
there is unknown: its operands and option values are *possible* reads (a rule they match is
uncertain).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.policy.shell.archives import TARS, tar_dashed
from gateway.policy.shell.filetable import FILE_USES, FileUse, Mode
from gateway.policy.shell.filetrees import recursive, tree, trees
from gateway.policy.shell.formatters import RUN_AS_MODULES, formatter_of, formatter_uses
from gateway.policy.shell.gitfiles import git_file_uses
from gateway.policy.shell.globs import program_glob
from gateway.policy.shell.words import Word


def file_uses(name: str, words: Sequence[Word]) -> list[tuple[Mode, Word]] | None:
    """(mode, path) for each file `words` (argv, name first) names; None for a program
    the table does not know (the caller treats its arguments as possible reads)."""
    if name == "dd":
        return _dd(words)
    if name == "git":
        return git_file_uses(words)
    module = _python_module(name, words)
    if module is not None:
        if not module:
            return None
        inner = module[0].text
        return file_uses(inner if inner in RUN_AS_MODULES else f"python -m {inner}", module)
    formatter = formatter_of(name, words)
    if formatter is not None:
        return formatter_uses(*formatter)
    use = FILE_USES.get(name)
    if use is None:
        return None
    if name in TARS:
        words = tar_dashed(words)
    argv = _read_argv(name, use, words)
    operands = argv.operands
    if use.globs:
        operands = [program_glob(w) for w in operands]
    linking = name in ("ln", "cp") and _symbolic(words) and len(operands) > 1
    if linking:
        operands = [*(_linked(w, operands[-1]) for w in operands[:-1]), operands[-1]]
    named = _operands(use, name, operands, argv.pattern_given, argv.in_place)
    if name in _BY_POSITION:
        named += _named_by_position(name, words, operands)
    if name == "install" and any(w.text in ("-d", "--directory") for w in words[1:]):
        named = [("write", w) for w in operands]  # each operand a directory it makes
    named += _moved_away(name, words, operands)
    found = [*argv.found, *named, *response_files(words)]
    if linking:  # what a link reaches is written through it too (ln -s .github g; rm g/x)
        found.extend(("write", w) for w in operands[:-1])
    if recursive(name, use, words):
        found.extend(trees(name, use, words, operands, named, argv.pattern_given))
    return found


def response_files(words: Sequence[Word]) -> list[tuple[Mode, Word]]:
    """`@FILE` arguments: GNU tools (gcc, as, ld, readelf, objdump, ...) and many others
    read more arguments from FILE, so FILE is read (`readelf -a @.env` prints it)."""
    return [("read", Word(w.text[1:], dynamic=w.dynamic, globby=w.globby))
            for w in words[1:] if w.text.startswith("@") and len(w.text) > 1]


def _python_module(name: str, words: Sequence[Word]) -> list[Word] | None:
    """`python -m MODULE ARGS`: [MODULE, *ARGS] as the module's own argv ([] for a module
    the table does not know); None when the command is no `python -m`."""
    if not name.startswith("python") or len(words) < 3:
        return None
    for i, word in enumerate(words[1:-1], start=1):
        if word.text == "-m":
            module = words[i + 1].text
            known = module in RUN_AS_MODULES or f"python -m {module}" in FILE_USES
            return list(words[i + 1:]) if known and not words[i + 1].dynamic else []
        if not word.text.startswith("-") or word.text == "-c":
            return None  # a script's or -c's arguments, not a module's
    return None


@dataclass
class _Argv:
    """An argv read by its program's table entry."""

    found: list[tuple[Mode, Word]] = field(default_factory=list)
    """Files that options name."""
    operands: list[Word] = field(default_factory=list)
    pattern_given: bool = False
    """An option gave the pattern or program (grep -e): every operand is a file."""
    in_place: bool = False
    """An option makes the operands written too (sed -i)."""


def _read_argv(name: str, use: FileUse, words: Sequence[Word]) -> _Argv:
    argv = _Argv()
    i = 1
    ended = False
    while i < len(words):
        word, text = words[i], words[i].text
        following = words[i + 1] if i + 1 < len(words) else None
        i += 1
        if ended or not text.startswith("-") or text == "-":
            argv.operands.append(word)
            continue
        if text == "--":
            ended = True
            continue
        if use.value_word and re.fullmatch(use.value_word, text):
            argv.operands.append(word)  # chmod -w FILE: the mode
            continue
        if text in use.pairs or text in use.pair_reads:
            if text in use.pair_reads and i + 1 < len(words):
                argv.found.append(("read", words[i + 1]))
            i += 2
            continue
        opt, eq, attached = text.partition("=")
        value = Word(attached, dynamic=word.dynamic) if eq else None
        if not eq and not opt.startswith("--") and len(opt) > 2 and not use.takes_value(opt) and (
                use.takes_value(opt[:2])):
            opt, value = opt[:2], Word(opt[2:], dynamic=word.dynamic)
        if opt in use.in_place or (opt[:2] in use.in_place and not opt.startswith("--")):
            argv.in_place = True
        named = not use.takes_value(opt) and bool(_FILE_OPTION.fullmatch(opt))
        if (use.takes_value(opt) or named) and value is None and following is not None:
            value, i = following, i + 1
        if opt in use.pattern_opts:
            argv.pattern_given = True
        if value is None:
            continue
        if opt in use.lists or (named and _LIST_OPTION.fullmatch(opt)):
            argv.found += [("read", value), ("read", LISTED_NAMES)]
        elif named:  # read or written: the gateway cannot tell which, so both
            argv.found += [("read", value), ("write", value)]
        else:
            argv.found.extend(_option_file(name, use, opt, value))
    return argv


_FILE_OPTION = re.compile(r"--[a-z0-9-]+-(?:from|file)")
"""A long option the table does not list that by its name takes a file (`du --exclude-from
F`, `x --output-file F`)."""
_LIST_OPTION = re.compile(r"--files0?-from")
"""Of those, one whose file lists the names the program reads (`sort --files0-from=F`)."""
LISTED_NAMES = Word("$(the names a list gives)", dynamic=True, lead_dynamic=True)
"""What a program reads from a list of names (a file, or its input): known when it runs."""


def _option_file(name: str, use: FileUse, option: str, value: Word) -> list[tuple[Mode, Word]]:
    """The file an option's value names, if it names one."""
    if option in use.reads:
        return [("read", _keyed_file(option, _at_file(name, value)))]
    if option in use.writes:
        return [("write", value)]
    if name == "curl" and option in ("-d", "--data", "--data-urlencode", "-F", "--form"):
        path = _curl_file(value)
        if path is not None:
            return [("read", path)]
    return []


_KEYED_FILES = frozenset({"--from-file", "--from-env-file", "--set-file"})
"""kubectl's and helm's options whose value may be KEY=FILE."""


def _keyed_file(option: str, value: Word) -> Word:
    """`--from-file=key=.env`: the file after the key."""
    key, eq, path = value.text.partition("=")
    if option not in _KEYED_FILES or not eq or "/" in key:
        return value
    return Word(path, dynamic=value.dynamic)


def _symbolic(words: Sequence[Word]) -> bool:
    return any(w.text in ("--symbolic", "--symbolic-link") or (
        w.text.startswith("-") and not w.text.startswith("--") and "s" in w.text[1:])
               for w in words[1:])


def _linked(target: Word, link: Word) -> Word:
    """A symbolic link to `target` makes everything under it reachable under another name
    (`ln -s ~ h; cat h/.ssh/id_rsa`): the link reads it all. A relative target is relative
    to the link's directory."""
    if target.dynamic and not re.fullmatch(_REFERENCE_ONLY, target.text):
        return target
    text = target.text
    if not text.startswith(("/", "~")) and "/" in link.text.rstrip("/"):
        base = link.text.rstrip("/").rsplit("/", 1)[0]
        text = f"{base}/{text}"
    below = f"{text.rstrip('/')}/**"
    return Word(text, dynamic=True, pattern=below)


_REFERENCE_ONLY = r"(?:[^$`]|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)*"
"""Text whose only expansions are plain $NAME references (resolved once the scan ends)."""


def _operands(use: FileUse, name: str, operands: list[Word], pattern_given: bool,
              in_place: bool) -> list[tuple[Mode, Word]]:
    kind = use.operands
    if kind in ("pattern-then-read", "script-then-read", "value-then-write") and (
            not pattern_given):
        operands = operands[1:]
    if kind == "none":
        return []
    if kind in ("write", "value-then-write"):
        return [("write", w) for w in operands]
    if kind == "edit":
        return [("read", w) for w in operands] + [("write", w) for w in operands]
    if kind == "to-last":
        if len(operands) < 2:
            return [("write", w) for w in operands] if name in ("touch",) else []
        dest = operands[-1]
        # The destination may be a directory: each source then lands inside it.
        inside: list[tuple[Mode, Word]] = [
            ("write", _inside(dest, w)) for w in operands[:-1]]
        return [*(("read", w) for w in operands[:-1]), *(
            ("write", w) for w in operands[:-1] if name == "mv"), ("write", dest), *inside]
    if kind == "in-out":
        return [("read", w) for w in operands[:1]] + [("write", w) for w in operands[1:2]]
    if kind == "archive":
        return _archive(name, operands)
    found: list[tuple[Mode, Word]] = [("read", w) for w in operands]
    if in_place:
        found += [("write", w) for w in operands]
    return found


_BY_POSITION = frozenset(("flock", "man", "tree", "zip", "cpio"))


def _named_by_position(name: str, words: Sequence[Word], operands: list[Word]
                       ) -> list[tuple[Mode, Word]]:
    """Operands a program takes as files by their place or form: the lock file `flock`
    opens (and creates) before the command it runs; a page `man` is given as a path (with a
    slash, or every one with -l); listings `tree --fromfile` prints; and the files `zip -@`
    and `cpio -o` read by the names their input lists."""
    if name == "flock" and operands and not operands[0].text.isdigit():
        return [("write", operands[0])]
    texts = {w.text for w in words[1:]}
    if name == "man":
        local = bool(texts & {"-l", "--local-file"})
        return [("read", w) for w in operands if local or "/" in w.text]
    if name == "tree" and any(t.startswith("--fromfile") for t in texts):
        given = [Word(t.partition("=")[2]) for t in texts if t.startswith("--fromfile=")]
        return [("read", w) for w in [*operands, *given]]  # listings it prints
    if (name == "zip" and texts & {"-@", "--names-stdin"}) or (
            name == "cpio" and texts & {"-o", "--create"}):
        return [("read", LISTED_NAMES)]  # the names its input lists
    return []


def _moved_away(name: str, words: Sequence[Word], operands: list[Word]
                ) -> list[tuple[Mode, Word]]:
    """Files a copy or a move takes away or reads that `to-last` does not tell: with
    `-t DIR` every operand is a source (`mv -t /tmp ci.yml` removes ci.yml); `rsync
    --remove-source-files` deletes its sources; `history -r|-n FILE` reads FILE into the
    history, `-w|-a FILE` writes it."""
    texts = [w.text for w in words[1:]]
    if name == "history":
        mode: Mode = "read" if {"-r", "-n"} & set(texts) else "write"
        return [(mode, w) for w in operands] if {"-r", "-n", "-w", "-a"} & set(texts) else []
    if name == "rsync" and "--remove-source-files" in texts:
        return [("write", w) for w in operands[:-1]]
    target = _target_directory(words)
    if target is None or name not in ("cp", "mv", "install", "ln") or not operands:
        return []
    moved: list[tuple[Mode, Word]] = [("write", w) for w in operands] if name == "mv" else []
    landed: list[tuple[Mode, Word]] = [("write", _inside(target, w)) for w in operands]
    return [("read", operands[-1]), *moved, *landed]  # `to-last` took the last for the dest


def _target_directory(words: Sequence[Word]) -> Word | None:
    """The directory `-t DIR` / `--target-directory=DIR` names (cp, mv, install, ln)."""
    for i, word in enumerate(words[1:], start=1):
        text = word.text
        if text in ("-t", "--target-directory"):
            return words[i + 1] if i + 1 < len(words) else None
        if text.startswith("--target-directory="):
            return Word(text.partition("=")[2], dynamic=word.dynamic)
        if text.startswith("-t") and len(text) > 2:
            return Word(text[2:], dynamic=word.dynamic)
    return None


def _inside(dest: Word, source: Word) -> Word:
    """Where `source` lands in the directory `dest`: under its last name."""
    name = source.text.rstrip("/").rsplit("/", 1)[-1]
    dynamic = dest.dynamic or (source.dynamic and not source.pattern and (
        not name or any(c in name for c in "$`")))
    if dest.globby and not dest.dynamic:
        # `cp a */dir/`: a new name inside whatever the glob names, which only the run tells
        return tree(Word(dest.text.rstrip("/") or "/", globby=True))
    return Word(dest.text.rstrip("/") + "/" + name, dynamic=dynamic,
                lead_dynamic=dest.lead_dynamic)


def _archive(name: str, operands: list[Word]) -> list[tuple[Mode, Word]]:
    """tar/zip/unzip: the archive and the members; which is read depends on the mode,
    which these tables do not follow, so both are read and the archive may be written."""
    return [("read", w) for w in operands] + [("write", w) for w in operands[:1]]


def _at_file(name: str, value: Word) -> Word:
    if name == "curl" and value.text.startswith("@"):
        return Word(value.text[1:], dynamic=value.dynamic)
    return value


def _curl_file(value: Word) -> Word | None:
    """curl -d @FILE, -F name=@FILE or name=<FILE read a file."""
    text = value.text
    if text.startswith("@"):
        return Word(text[1:], dynamic=value.dynamic)
    _, eq, rest = text.partition("=")
    if eq and rest[:1] in ("@", "<"):
        return Word(rest[1:].split(";", 1)[0], dynamic=value.dynamic)
    return None


def _dd(words: Sequence[Word]) -> list[tuple[Mode, Word]]:
    found: list[tuple[Mode, Word]] = []
    for word in words[1:]:
        key, eq, value = word.text.partition("=")
        if eq and key in ("if", "of"):
            found.append(("read" if key == "if" else "write", Word(value, dynamic=word.dynamic)))
    return found
