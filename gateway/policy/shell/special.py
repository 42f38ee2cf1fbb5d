"""Programs whose arguments carry code: the commands they will run, the scripts they read,
the files they read and write, and what cannot be known. Pure over the argv.

The generic part reads `programs.CODE_OPTIONS`; awk, sed, tmux, socat, crontab, at, make and
the SQL shells get small readers of their own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.policy.shell import programs
from gateway.policy.shell.words import Word

AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "original-awk", "busybox-awk"})
SEDS = frozenset({"sed", "gsed"})
_SQL_SHELL = re.compile(r"\\!|^\s*\.(?:sh|shell|system|once|output|import|read|load)\b"
                        r"|\bprogram\b|\\o\s*\||\\g\s*\||\bsystem\s", re.I | re.M)
_NOT_ANALYSED = "\0"
_STDIN_PATHS = frozenset({"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})


@dataclass
class SpecialRun:
    scripts: list[Word] = field(default_factory=list)
    """Command lines the program runs (scanned as bash)."""
    commands: list[list[Word]] = field(default_factory=list)
    """Argvs the program runs, with arguments added at run time (fd -x CMD)."""
    script_files: list[Word] = field(default_factory=list)
    """Shell script files it runs (read from disk and scanned)."""
    stdin_language: str = ""
    """It reads code in this language from stdin (a literal feed is analysed)."""
    reads: list[Word] = field(default_factory=list)
    writes: list[Word] = field(default_factory=list)
    problem: str = ""

    def fail(self, why: str) -> None:
        self.problem = self.problem or why


def special_program(name: str, words: Sequence[Word]) -> SpecialRun | None:
    """What `words` (name first) run, or None for a program with no code in its argv."""
    if name in AWKS:
        return _awk(words)
    if name in SEDS:
        return _sed(words)
    reader = _READERS.get(name)
    if reader is not None:
        return reader(words)
    table = programs.CODE_OPTIONS.get(name)
    if table:
        run = _options(name, table, words)
        if name in _VIMS:  # a stdin that is no terminal is typed into it: `:!cmd` runs
            run.stdin_language = "vim"
        return run
    return None


_VIMS = frozenset(("vim", "vi", "nvim", "view", "ex", "vimdiff", "rvim", "gvim"))


def _options(name: str, table: dict[str, programs.CodeKind], words: Sequence[Word]
             ) -> SpecialRun:
    run = SpecialRun()
    for option, value in _option_values(table, words):
        kind = table[option]
        if value.dynamic:
            run.fail(f"{name} {option} gets code computed at run time")
            continue
        text = _command_part(name, option, value.text)
        if text is None:
            continue
        if kind == "shell" and text is not _NOT_ANALYSED:
            run.scripts.append(Word(text))
        elif name in ("psql", "mysql", "sqlite3") and not _SQL_SHELL.search(text):
            continue
        else:
            run.fail(f"{name} {option} runs code that is not analysed")
    return run


def _command_part(name: str, option: str, value: str) -> str | None:
    """The part of an option value that is a command line; None when the value runs none."""
    if name in ("ssh", "scp", "sftp") and option == "-o":
        parts = re.split(r"\s*=\s*|\s+", value.strip(), maxsplit=1)
        key, rest = parts[0].lower(), parts[1] if len(parts) > 1 else ""
        if key not in programs.SSH_COMMAND_OPTIONS:
            return None
        return rest if key != "match" else _NOT_ANALYSED
    if name in ("apt", "apt-get") and option in ("-o", "--option"):
        key, _, rest = value.partition("=")
        return rest if any(k in key.lower() for k in programs.APT_COMMAND_KEYS) else None
    if name == "tar" and option == "--checkpoint-action":
        return value[5:] if value.startswith("exec=") else None
    if name == "less" and option == "+":
        if value.startswith("!"):
            return value[1:]
        return value if "|" in value else None
    if name in ("vim", "vi", "nvim", "view", "vimdiff", "ex") and option == "+":
        return None if re.fullmatch(r"\d*|/.*|\$", value) else value
    return value


def _option_values(table: dict[str, programs.CodeKind], words: Sequence[Word]
                   ) -> list[tuple[str, Word]]:
    found: list[tuple[str, Word]] = []
    i = 1
    while i < len(words):
        text = words[i].text
        following = words[i + 1] if i + 1 < len(words) else Word("")
        if text == "--":
            break
        if text.startswith("+") and "+" in table:
            found.append(("+", Word(text[1:], dynamic=words[i].dynamic)))
        elif text in table:
            found.append((text, following))
            i += 1
        elif "=" in text and text.partition("=")[0] in table:
            opt, _, value = text.partition("=")
            found.append((opt, Word(value, dynamic=words[i].dynamic)))
        elif text.startswith("-") and not text.startswith("--") and len(text) > 2:
            opt = text[:2]
            if opt in table:
                found.append((opt, Word(text[2:], dynamic=words[i].dynamic)))
        i += 1
    return found


def _awk(words: Sequence[Word]) -> SpecialRun:
    run = SpecialRun()
    program: Word | None = None
    has_file = False
    i = 1
    while i < len(words):
        word, text = words[i], words[i].text
        following = words[i + 1] if i + 1 < len(words) else Word("")
        if text == "--":
            i += 1
            break
        if text in ("-f", "--file", "-E", "--exec"):
            has_file = True
            if following.text in _STDIN_PATHS:
                run.stdin_language = "awk"
            else:
                run.fail(f"awk runs a program file ({following.text}) that is not analysed")
            i += 2
            continue
        if text in ("-e", "--source"):
            program = following
            i += 2
            continue
        if text in ("-i", "--include", "-l", "--load"):
            run.fail("awk loads an extension or library")
            i += 2
            continue
        if text in ("-F", "-v", "--assign", "--field-separator"):
            i += 2
            continue
        if text.startswith("-") and len(text) > 1 and not word.dynamic:
            i += 1
            continue
        break
    if program is None and not has_file and i < len(words):
        program = words[i]
    if program is None:
        return run
    if program.dynamic:
        run.fail("awk runs a program computed at run time")
        return run
    from gateway.policy.shell.awk import analyse_awk  # awk and sed readers load on use

    effects = analyse_awk(program.text)
    run.fail(effects.unparseable)
    run.scripts.extend(Word(c) for c in effects.scripts)
    run.reads.extend(effects.reads)
    run.writes.extend(effects.writes)
    return run


def _sed(words: Sequence[Word]) -> SpecialRun:
    run = SpecialRun()
    scripts: list[Word] = []
    operands: list[Word] = []
    sandbox = False
    i = 1
    ended = False
    while i < len(words):
        word, text = words[i], words[i].text
        following = words[i + 1] if i + 1 < len(words) else Word("")
        if ended or not text.startswith("-") or text == "-":
            operands.append(word)
        elif text == "--":
            ended = True
        elif text in ("-e", "--expression"):
            scripts.append(following)
            i += 1
        elif text.startswith("--expression="):
            scripts.append(Word(text.partition("=")[2], dynamic=word.dynamic))
        elif text in ("-f", "--file") or text.startswith("--file="):
            path = following if text in ("-f", "--file") else Word(text.partition("=")[2])
            i += 1 if text in ("-f", "--file") else 0
            if path.text in _STDIN_PATHS:
                run.stdin_language = "sed"
            else:
                run.fail(f"sed runs a script file ({path.text}) that is not analysed")
            scripts.append(Word(""))
        elif text == "--sandbox":
            sandbox = True
        elif text in ("-l", "--line-length"):
            i += 1
        elif not text.startswith("--") and "e" in text[1:]:
            # -ne 'script': bundled short options ending in e take the script
            scripts.append(following)
            i += 1
        elif not text.startswith("--") and "f" in text[1:]:
            run.fail("sed runs a script file that is not analysed")
            i += 1
        i += 1
    if not scripts and operands:
        scripts.append(operands.pop(0))
    for script in scripts:
        if script.dynamic:
            run.fail("sed runs a script computed at run time")
            continue
        from gateway.policy.shell.sed import analyse_sed

        effects = analyse_sed(script.text)
        if not sandbox:  # --sandbox refuses e, w and r
            run.fail(effects.unparseable)
            run.scripts.extend(Word(c) for c in effects.scripts)
            run.writes.extend(effects.writes)
            run.reads.extend(effects.reads)
    run.reads.extend(operands)
    return run


def _tmux(words: Sequence[Word]) -> SpecialRun:
    """tmux commands take shell commands as operands (new-session, run-shell, if-shell, ...);
    send-keys types into a shell. Every static operand is scanned as a command line."""
    run = SpecialRun()
    texts = [w.text for w in words[1:]]
    if any(t in ("send-keys", "send", "send-prefix", "source-file", "source", "command-prompt")
           for t in texts):
        run.fail("tmux types keys or runs a command file that is not analysed")
        return run
    for word in words[1:]:
        if word.dynamic:
            run.fail("tmux runs text computed at run time")
        elif not word.text.startswith("-"):
            run.scripts.append(word)
    return run


def _screen(words: Sequence[Word]) -> SpecialRun:
    run = SpecialRun()
    if any(w.text in ("-X", "-Q") or (w.text.startswith("-") and "X" in w.text[1:]
                                       and not w.text.startswith("--")) for w in words[1:]):
        run.fail("screen -X sends commands to a session that are not analysed")
    return run


def _socat(words: Sequence[Word]) -> SpecialRun:
    run = SpecialRun()
    for word in words[1:]:
        head, colon, rest = word.text.partition(":")
        if colon and head.upper() in ("EXEC", "SYSTEM", "SHELL"):
            if word.dynamic:
                run.fail("socat runs a command computed at run time")
            else:
                run.scripts.append(Word(re.split(r",(?=[a-z-]+(?:=|,|$))", rest)[0]))
        else:
            _socat_files(run, word)
    return run


def _crontab(words: Sequence[Word]) -> SpecialRun:
    """crontab FILE, crontab - and a bare crontab (stdin) install jobs; -l/-r/-e do not."""
    run = SpecialRun()
    if not any(w.text in ("-l", "-r", "-e", "-i") for w in words[1:]):
        run.fail("crontab installs commands that run later; they are not analysed")
    return run


def _fd(words: Sequence[Word]) -> SpecialRun:
    """fd -x CMD ARGS / -X CMD ARGS: everything after the option is the command."""
    run = SpecialRun()
    for i, word in enumerate(words[1:], start=1):
        if word.text in ("-x", "--exec", "-X", "--exec-batch"):
            argv = [w for w in words[i + 1 :] if w.text != ";"]
            if argv:
                run.commands.append([Word(w.text, dynamic=True) if "{" in w.text else w
                                     for w in argv])
            return run
    return run


def _at(words: Sequence[Word]) -> SpecialRun:
    run = SpecialRun()
    texts = [w.text for w in words[1:]]
    if any(t in ("-l", "-r", "-d", "-c") for t in texts):
        return run
    for i, text in enumerate(texts):
        if text == "-f" and i + 1 < len(texts):
            run.script_files.append(words[i + 2])
            return run
    run.stdin_language = "bash"
    return run


def _make(words: Sequence[Word]) -> SpecialRun:
    run = _options("make", programs.CODE_OPTIONS["make"], words)
    for i, word in enumerate(words[1:], start=1):
        text = word.text
        name, eq, value = text.partition("=")
        if eq and name in ("SHELL", ".SHELLFLAGS", "MAKESHELL"):
            run.scripts.append(Word(value, dynamic=word.dynamic))
        path = ""
        if text in ("-f", "--file", "--makefile") and i + 1 < len(words):
            path = words[i + 1].text
        elif text.startswith(("--file=", "--makefile=")):
            path = value
        elif text.startswith("-f") and len(text) > 2:
            path = text[2:]
        if path in _STDIN_PATHS:
            run.stdin_language = "make"
    return run


_SQL_FILES = re.compile(r"\b(?:readfile|writefile|edit|load_extension)\s*\(|\battach\b"
                        r"|\bvacuum\s+into\b|^\s*\.(?:save|backup|restore|open|clone|excel|"
                        r"log|trace|iotrace|archive|ar|dump\s+--)", re.I | re.M)
"""SQL and dot-commands that read or write files the SQL names (`select readfile('.env')`,
`attach 'x.db'`): not analysed."""


def _sqlite(words: Sequence[Word]) -> SpecialRun:
    run = _options("sqlite3", programs.CODE_OPTIONS["sqlite3"], words)
    sql = [w for w in words[2:] if not w.text.startswith("-")]
    for word in sql:
        if word.dynamic:
            run.fail("sqlite3 runs SQL computed at run time")
        else:
            run.fail(sql_problem(word.text))
    if not sql:  # without SQL in its arguments, sqlite3 reads it from stdin
        run.stdin_language = "sql"
    return run


def sql_problem(text: str) -> str:
    """Why SQL for sqlite3 cannot be run unseen: a dot-command that starts programs, or SQL
    that opens files it names ('' when neither)."""
    if _SQL_SHELL.search(text) or "|" in text:
        return "sqlite3 runs a dot-command that starts programs"
    if _SQL_FILES.search(text):
        return "sqlite3 runs SQL that reads or writes files it names"
    return ""


def _ed(words: Sequence[Word]) -> SpecialRun:
    """ed reads its commands from stdin: `!cmd` runs a shell, `r F` and `w F` open files."""
    run = SpecialRun()
    run.stdin_language = "ed"
    return run


_SOCAT_FILES = frozenset(("FILE", "OPEN", "GOPEN", "CREATE", "PIPE", "NAMED"))
_SOCAT_FILE_OPTIONS = re.compile(r",(?:cert|key|cafile|capath|dhparam|history)=([^,]+)", re.I)


def _socat_files(run: SpecialRun, word: Word) -> None:
    """An address that opens a file (`FILE:.env`, `GOPEN:x`, a bare path with a slash), and
    files its options name (`cert=`, `history=`): each read and written (-u and -U only
    choose the direction)."""
    head, colon, rest = word.text.partition(":")
    target = ""
    if colon and head.upper() in _SOCAT_FILES:
        target = re.split(r",(?=[a-z-]+(?:=|,|$))", rest)[0]
    elif not colon and "/" in word.text and not word.text.startswith("-"):
        target = word.text.split(",", 1)[0]
    if target:
        path = Word(target, dynamic=word.dynamic)
        run.reads.append(path)
        run.writes.append(path)
    for found in _SOCAT_FILE_OPTIONS.finditer(word.text):
        run.reads.append(Word(found.group(1), dynamic=word.dynamic))


def _run_parts(words: Sequence[Word]) -> SpecialRun:
    """run-parts DIR runs every program in DIR its options select (`--regex '^sh$' /bin`
    is a shell on its stdin); --test and --list only print their names."""
    run = SpecialRun()
    if not any(w.text in ("--test", "--list") for w in words[1:]):
        run.fail("run-parts runs the programs in a directory, whose code is not analysed")
    return run


_READERS = {
    "run-parts": _run_parts,
    "ed": _ed,
    "red": _ed,
    "tmux": _tmux,
    "screen": _screen,
    "socat": _socat,
    "crontab": _crontab,
    "fd": _fd,
    "fdfind": _fd,
    "at": _at,
    "batch": _at,
    "make": _make,
    "gmake": _make,
    "sqlite3": _sqlite,
}

SPECIAL_PROGRAMS = frozenset({*AWKS, *SEDS, *_READERS})
