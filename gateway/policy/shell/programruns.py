"""Programs the walk follows into, each by what it does: shells (their options, -c strings,
script operands and stdin), eval, trap, source, the builtins that take variable names or
run code (hash -p, enable -f, fc, bind -x, complete -C, declare -i, ...), git (aliases,
configuration that runs programs), find (-exec, -delete) and xargs (the command it runs,
with the items it reads)."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.policy.shell import programs
from gateway.policy.shell.evaluation import NAME_TAKING
from gateway.policy.shell.files import resolve
from gateway.policy.shell.gitfiles import git_subcommand
from gateway.policy.shell.globs import GLOB_CHARS
from gateway.policy.shell.patches import patch_run
from gateway.policy.shell.scanned import INHERITED, Feed, replace_command
from gateway.policy.shell.syntaxwalk import SyntaxWalk, nameref
from gateway.policy.shell.words import Word
from gateway.policy.shell.wrappers import FOREIGN_SHELLS, SHELL_VALUE_OPTS, SHELLS

if TYPE_CHECKING:
    from gateway.policy.shell.xargs import Xargs


_PATH_ITSELF = ("$PATH", "${PATH}")


class ProgramRuns(SyntaxWalk):
    def shell(self, name: str, words: Sequence[Word], via: tuple[str, ...], depth: int,
              feed: Feed, appended: bool) -> None:
        """bash, sh, zsh, ...: the code it runs, from -c, a script operand or stdin."""
        found = shell_arguments(name, words, appended)
        self.fail(found.problem)
        self.record(words, via, True)
        if name in FOREIGN_SHELLS and (found.code is not None or found.operand is not None or
                                       feed != INHERITED):
            self.fail(f"{name} runs code in a language that is not analysed")
        elif found.code is not None:
            self.shell_string(name, found.code, found.positional, via, depth, feed)
        elif appended:
            self.fail(f"{name} gets its script from arguments added at run time")
        elif found.operand is not None and not found.stdin:
            operand = found.operand
            self.with_positional(found.positional, lambda: self.script_file(
                operand, (*via, name), depth, name))
        else:
            self.stdin_code("bash", feed, via, depth, name)

    def shell_string(self, name: str, code: Word, positional: Sequence[Word],
                     via: tuple[str, ...], depth: int, feed: Feed = INHERITED) -> None:
        """`sh -c CODE $0 $1 ...`: CODE walked with its own positional parameters."""
        self.with_positional(positional, lambda: self.code(code, via, depth, name, feed))

    def with_positional(self, positional: Sequence[Word], walk: Callable[[], None],
                        more: bool = False) -> None:
        """Walk code whose $0, $1, ... (and "$@", one of them at a time) are these words;
        `more`: others follow, only known at run time (xargs appends them)."""
        names = [*(str(k) for k in range(len(positional))), "@"]
        added = [n for n in names if n not in self.variables.dominated]
        for k, value in enumerate(positional):
            self.bind(str(k), value)
        for value in positional[1:] or [Word("")]:
            self.bind("@", value)
        if more:
            self.variables.unknown("@")
        self.variables.dominated.update(added)  # the script's own $0, $1, ...
        walk()
        self.variables.dominated.difference_update(added)

    def positional_changed(self) -> None:
        """`shift`, `set -- ...`: $1, $2, ... and "$@" no longer hold what was bound."""
        for name in [n for n in self.variables.bound if n.isdigit() or n == "@"]:
            self.variables.unknown(name)

    def path_programs(self) -> None:
        """Commands named without a path, when the command puts directories on PATH
        (`export PATH=.:$PATH; ls`): the file a name finds there first is the program run,
        walked as `program_file` walks one run by its path; one the command writes there is
        unknown code; a directory only known at run time makes every such name unknown."""
        dirs = self.added_path_dirs()
        if not dirs:
            return
        written = {os.path.basename(a.path.text) for a in self.accesses
                   if a.mode == "write" and not a.possible
                   and a.command.split(" ", 1)[0].rsplit("/", 1)[-1] not in (
                       programs.BUILDS_BINARIES | programs.WRITE_NO_CODE)}
        for command in list(self.commands):
            head = command.words[0] if command.words else None
            if (head is None or head.dynamic or "/" in head.text or command.speculative
                    or head.text in programs.BASH_BUILTINS or head.text in self.functions):
                continue
            if dirs == ["?"]:
                self.fail(f"{head.text} may run a program from a directory PATH is given at "
                          "run time")
                return
            if head.text in written:
                self.fail(f"{head.text} may run a file the command writes into a directory it "
                          "puts on PATH: its code cannot be analysed")
                return
            for directory in dirs:
                if self.files.script(os.path.join(directory, head.text), "/").text is not None:
                    self.program_file([Word(os.path.join(directory, head.text)),
                                       *command.words[1:]], command.via, 1)
                    break

    def added_path_dirs(self) -> list[str]:
        """The directories the command's PATH values add (["?"]: one only known at run
        time); an empty entry is the working directory."""
        dirs: list[str] = []
        cwds = None if self.cwd_unknown else dict.fromkeys(self.cwds)
        for value, cwds_then in self.path_values:
            for part in value.text.split(":"):
                if part in _PATH_ITSELF or self.saved_path(part):
                    continue
                part = part.replace("$(pwd)", "$PWD").replace("`pwd`", "$PWD")
                found = [Word(part)] if "$" not in part and "`" not in part else (
                    self.variables.alternatives(Word(part, dynamic=True),
                                                self.files.environment, cwds))
                if any(w.dynamic and w.text not in _PATH_ITSELF for w in found):
                    return ["?"]
                found = [w for w in found if not w.dynamic]
                for word in found:
                    if cwds_then is None and not word.text.startswith(("/", "~")):
                        return ["?"]
                    for cwd in cwds_then or ("/",):
                        directory = resolve(word.text or ".", cwd)
                        if directory not in programs.SYSTEM_BIN_DIRS:
                            dirs.append(directory)
        return list(dict.fromkeys(dirs))

    def saved_path(self, part: str) -> bool:
        """`${_OLD_VIRTUAL_PATH:-}`: every variable it names holds only PATH's old value (a
        virtual environment's `deactivate` restoring it)."""
        names = re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", part)
        return bool(names) and all(
            self.variables.bound.get(name) and all(
                v.text in _PATH_ITSELF for v in self.variables.bound[name]) for name in names)

    def own_script(self, words: Sequence[Word], via: tuple[str, ...], depth: int,
                   appended: bool) -> bool:
        """`./git status`, `bin/timeout 5 ls`: a file outside the system's program
        directories is the program run, whatever its name, so a shell script there is walked,
        not read as the program of that name. One not there yet is also noted: code the
        command writes there is unknown (missing_program_problem). In a directory known only
        once the walk ends, it is read then, and the command read by its name meanwhile."""
        path = words[0].text
        places = self.scripts_at(path, system=False)
        if places is None:
            self.program_file(words, via, depth, appended)  # deferred
            return False
        own = False
        for _, found in places:
            if found.missing and not self.speculating:
                self.missing_programs.append(path)
            own = own or found.bash_runs or (found.text is not None and shebang_interpreter(
                found.text) in ("", *SHELLS, *FOREIGN_SHELLS))
        return own

    def program_file(self, words: Sequence[Word], via: tuple[str, ...], depth: int,
                     appended: bool = False) -> None:
        """A program named by its path (`./build.sh a`): a shell script there is walked as
        `sh ./build.sh a` runs it, with its arguments as $1, ... A `#!` naming a shell, or
        none (bash runs a text file without one itself); one naming another interpreter, a
        binary, or a script over the size cap is left as an unknown program. A script not
        there yet that the command itself writes is code not known here."""
        path = words[0]
        places = self.scripts_at(path.text)
        if places is None:
            self.deferred.setdefault(
                ("program", path.text, *(w.text for w in words[1:]), *via),
                lambda: self.program_file(words, via, depth, appended))
            return
        for _, found in places:
            if found.bash_runs:
                self.fail(f"{path.text} holds NUL bytes after its first line, which bash runs "
                          "as a script that is not analysed")
                return
            if found.text is None:
                if found.missing and not self.speculating:
                    self.missing_programs.append(path.text)
                continue
            interpreter = shebang_interpreter(found.text)
            if interpreter in FOREIGN_SHELLS:
                self.fail(f"{path.text} runs code in a language that is not analysed")
            elif interpreter in ("", *SHELLS):
                self.with_positional(words, functools.partial(
                    self.script, found.text, (*via, path.text), depth + 1, INHERITED),
                    more=appended)

    def evaluate(self, words: Sequence[Word], via: tuple[str, ...], depth: int,
                 feed: Feed = INHERITED) -> None:
        self.record(words, via, True)
        parts = list(words[1:])
        if parts and parts[0].text == "--":
            parts = parts[1:]
        if any(w.dynamic for w in parts):
            self.fail("eval runs text computed at run time")
        elif parts:
            self.script(" ".join(w.text for w in parts), (*via, "eval"), depth + 1, feed)

    def trap(self, words: Sequence[Word], via: tuple[str, ...], depth: int) -> None:
        self.record(words, via, True)
        parts = list(words[1:])
        while parts and parts[0].text.startswith("-") and parts[0].text not in ("-", "--"):
            if parts[0].text in ("-l", "-p", "-P"):
                return  # lists signals or handlers
            parts = parts[1:]
        if parts and parts[0].text == "--":
            parts = parts[1:]
        if not parts or parts[0].text == "-":
            return
        self.code(parts[0], via, depth, "trap")

    def source(self, words: Sequence[Word], via: tuple[str, ...], depth: int,
               feed: Feed) -> None:
        operands = [w for w in words[1:] if w.text != "--"]
        if not operands:
            return
        target = operands[0]
        if target.text in ("/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "-"):
            self.stdin_code("bash", feed if feed != INHERITED else Feed(unknown="stdin"), via,
                            depth, "source")
            return
        self.script_file(target, via, depth, "source")

    def builtin(self, name: str, words: Sequence[Word], via: tuple[str, ...],
                depth: int) -> None:
        self.record(words, via, False)
        args = words[1:]
        texts = [w.text for w in args]
        if name == "hash" and "-p" in texts:
            self.fail("hash -p makes a command name run another program")
        elif name == "enable" and any(t.startswith("-") and "f" in t for t in texts):
            self.fail("enable -f loads a builtin from a shared library")
        elif name == "fc" and not any(t.startswith("-") and "l" in t for t in texts):
            self.fail("fc runs commands from the history or an editor")
        elif name == "bind" and any(t.startswith("-") and "x" in t for t in texts):
            self.fail("bind -x runs a command on a key")
        elif name in ("compgen", "complete", "mapfile", "readarray"):
            for i, word in enumerate(args):
                if word.text in ("-C",) or (word.text.startswith("-") and word.text.endswith(
                        "C") and not word.text.startswith("--")):
                    value = args[i + 1] if i + 1 < len(args) else Word("")
                    self.code(value, via, depth, f"{name} -C")
        if name in NAME_TAKING:
            names = name_args(name, args)
            self.hazards.name_arguments(name, names)
            if name in ("read", "mapfile", "readarray", "printf", "getopts"):
                for variable, _ in names:
                    self.hazards.assign(variable.split("[", 1)[0], "", True)
                    self.variables.unknown(variable.split("[", 1)[0])
            elif name == "unset":
                for variable, _ in names:
                    self.bind(variable, Word(""))
            if any(t.startswith("-") and "i" in t[1:] for t in texts if not t.startswith("--")
                   ) and name in ("declare", "typeset", "local", "export", "readonly"):
                self.hazards.referenced.update(v.split("[", 1)[0] for v, _ in names)
        if name in ("export", "declare", "typeset", "local", "readonly"):
            references = nameref(texts)
            for word in args:
                key, eq, setting = word.text.partition("=")
                base = key.split("[", 1)[0].rstrip("+")
                if word.text.startswith("-"):
                    pass
                elif references or key != base or setting.startswith("("):
                    self.variables.unknown(base)  # a name reference, f+=x, an array
                else:
                    self.bind(key, Word(setting, dynamic=word.dynamic) if eq else Word(""))
                if eq and not word.text.startswith("-"):
                    self.hazards.assign(key, setting, word.dynamic)
                    self.unsafe_for_allow = self.unsafe_for_allow or self.environment(
                        key, Word(setting, dynamic=word.dynamic), via, depth)

    def git(self, words: Sequence[Word], via: tuple[str, ...], depth: int, feed: Feed,
            appended: bool) -> None:
        from gateway.policy.shell import gitcmd  # on first use: its patterns cost at start

        run = gitcmd.analyse_git(words, self.git_aliases,
                                 lambda name: self.files.git_alias(name, self.cwd))
        self.fail(run.problem)
        defined = gitcmd.defined_alias(words)
        if defined is not None:
            self.git_aliases[defined[0]] = defined[1]
        index = self.record(run.argv, via, bool(run.scripts), appended=appended)
        configured = any(w.text.startswith(("-c", "--config-env", "--exec-path"))
                         for w in words[1:])
        if run.scripts or run.problem or configured:
            self.commands[index] = replace_command(self.commands[index], carries_code=(
                "git runs a program named in its configuration or options"))
        for script in run.scripts:
            self.code(script, via, depth, "git")
        listed = gitcmd.listed_files(run.argv)
        if listed is not None:
            self.outputs[index] = listed
        at = git_subcommand(run.argv)
        if at is not None and run.argv[at].text in ("apply", "am"):
            self.patched(patch_run("git", run.argv[at + 1:]), feed, self.commands[index].text)

    def find(self, words: Sequence[Word], via: tuple[str, ...], depth: int, feed: Feed,
             appended: bool) -> None:
        """find: the commands -exec runs and the files -delete removes, on the files it
        selects (a pattern: see findcmd); what it prints, for a consumer such as xargs."""
        from gateway.policy.shell.findcmd import analyse_find  # on first use

        run = analyse_find(words)
        index = self.record(words, via, False, appended=appended)
        for path in run.deletes:
            self.access("write", path, self.commands[index].text)
        for argv in run.commands:  # -exec's commands inherit find's stdin
            self.emit(argv, (*via, words[0].text), depth, feed)
        self.outputs[index] = run.prints

    def xargs(self, words: Sequence[Word], inner: Sequence[Word], via: tuple[str, ...],
              depth: int, feed: Feed) -> None:
        """The command xargs runs, with the items it reads: known from a literal input or
        find's selection, else unknown words (that may be options)."""
        from gateway.policy.shell.xargs import MAX_RUNS, put, xargs_options  # on first use

        options = xargs_options(words[1 : len(words) - len(inner)])
        values = None if options.from_file else self.input_items(feed, options)
        if values is None:
            unknown = Word("$(xargs input)", dynamic=True, lead_dynamic=True)
            if options.marker:
                self.emit(placeholders("xargs", words, tuple(inner)), via, depth, feed,
                          appended=True)
            else:
                self.emit([*inner, unknown], via, depth, feed, appended=True)
        elif options.marker:
            for value in values[:MAX_RUNS]:
                self.emit([put(w, options.marker, value) for w in inner], via, depth, feed)
            if len(values) > MAX_RUNS:
                self.emit(placeholders("xargs", words, tuple(inner)), via, depth, feed,
                          appended=True)
        else:
            self.emit([*inner, *values], via, depth, feed)

    def input_items(self, feed: Feed, options: Xargs) -> list[Word] | None:
        """What xargs reads, as Words: literal items, or files find selects; None when
        unknown."""
        if feed.text is None and feed.pipe is not None:
            start, end = feed.pipe
            produced = self.produced(start, end)
            if produced.text is None:
                found = [self.outputs.get(k) for k in range(start, end)]
                if not found or any(f is None for f in found):
                    return None
                return [w for f in found if f is not None for w in f]
            feed = produced
        if feed.text is None:
            return None
        from gateway.policy.shell.xargs import items

        texts = items(feed.text, options)
        if texts is None:
            return None
        return [Word(t, verbatim=not GLOB_CHARS.isdisjoint(t)) for t in texts]


def placeholders(name: str, words: Sequence[Word], inner: tuple[Word, ...]) -> list[Word]:
    """xargs -I{} / parallel {}: words holding the replace string are run-time text."""
    marker = "{}" if name == "parallel" else ""
    if name == "xargs":
        start = next((i for i, w in enumerate(words) if inner and w is inner[0]), len(words))
        options = words[1:start]
        for i, word in enumerate(options):
            text = word.text
            if text == "-I" and i + 1 < len(options):
                marker = options[i + 1].text
            elif text.startswith("-I") and len(text) > 2:
                marker = text[2:]
            elif text in ("-i", "--replace"):
                marker = "{}"
            elif text.startswith("-i") and not text.startswith("--"):
                marker = text[2:]
            elif text.startswith("--replace="):
                marker = text.partition("=")[2]
    if not marker:
        return list(inner)
    return [Word(w.text, dynamic=True, lead_dynamic=w.text.startswith(marker))
            if marker in w.text else w for w in inner]


def name_args(name: str, args: Sequence[Word]) -> list[tuple[str, bool]]:
    """The words a builtin reads as variable names (where a subscript would be evaluated)."""
    texts = [w.text for w in args]
    if name == "printf":
        return [(args[i + 1].text, args[i + 1].dynamic) for i, t in enumerate(texts[:-1])
                if t == "-v"]
    if name in ("test", "["):
        return [(args[i + 1].text, args[i + 1].dynamic) for i, t in enumerate(texts[:-1])
                if t == "-v"]
    if name == "let":
        return [(w.text, w.dynamic) for w in args]
    names: list[tuple[str, bool]] = []
    skip = False
    for word in args:
        if skip:
            skip = False
            continue
        if word.text.startswith("-") and not word.dynamic:
            skip = name in ("read", "mapfile", "readarray") and word.text[-1:] in "dnNptuCcsi"
            continue
        names.append((word.text.partition("=")[0], word.dynamic))
    return names


@dataclass(frozen=True)
class ShellArguments:
    """What a shell's argv asks it to run."""

    code: Word | None
    """The command string (-c, fish's --command), None when there is none."""
    operand: Word | None
    """The first operand: a script file, or the command string's own."""
    positional: Sequence[Word]
    """$0, $1, ... of a command string or a script file."""
    stdin: bool
    """-s or `-`: the script is read from stdin."""
    problem: str


def shell_arguments(name: str, words: Sequence[Word], appended: bool) -> ShellArguments:
    code: Word | None = None
    stdin = False
    problem = ""
    i = 1
    while i < len(words):
        word, text = words[i], words[i].text
        if word.may_be_option:
            problem = f"{name} options computed at run time"
            break
        if text in ("--", "-"):
            stdin = stdin or text == "-"
            i += 1
            break
        if text in SHELL_VALUE_OPTS:
            i += 2
            continue
        if text.startswith(("--command=", "--init-command=")):
            code = Word(text.partition("=")[2])
            i += 1
            continue
        if text in ("--command", "--init-command", "-C") and name == "fish":
            code = words[i + 1] if i + 1 < len(words) else Word("")
            i += 2
            continue
        if text[:1] in ("-", "+") and len(text) > 1 and not text.startswith("--"):
            if "c" in text[1:] and text[0] == "-":
                code = Word("")  # the command string is the first operand
            stdin = stdin or ("s" in text[1:] and text[0] == "-")
            i += 1
            continue
        if text.startswith("--"):
            i += 1
            continue
        break
    operand = words[i] if i < len(words) else None
    positional: Sequence[Word] = ()
    if code is not None and not code.text and operand is not None:
        code, positional = operand, words[i + 1 :]  # sh -c CODE $0 $1 ...
    elif code is None and operand is not None:
        positional = words[i:]  # sh FILE $1 ...: FILE is $0
    if code is not None and operand is None and not code.text and appended:
        code = Word("", dynamic=True)  # xargs sh -c: the script is the appended input
    return ShellArguments(code, operand, positional, stdin, problem)


def shebang_interpreter(text: str) -> str:
    """The program a script's `#!` line names ('' without one), through `env`."""
    if not text.startswith("#!"):
        return ""
    parts = text[2:].split("\n", 1)[0].split()
    if not parts:
        return ""
    program = parts[0].rsplit("/", 1)[-1]
    if program == "env":
        rest = [p for p in parts[1:] if not p.startswith("-") and "=" not in p]
        program = rest[0].rsplit("/", 1)[-1] if rest else ""
        parts = rest
    if program in ("busybox", "toybox") and len(parts) > 1:  # `#!/bin/busybox sh`
        program = parts[1].rsplit("/", 1)[-1]
    return program
