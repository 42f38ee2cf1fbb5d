"""An argv, sent to what knows its program: aliases, wrappers (env, sudo, timeout, ...) and
what they wrap, shells, interpreters, eval, trap, source, git, find, builtins, programs whose
arguments carry code (special.py), and unknown programs, whose arguments are read ahead as a
command they might run."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gateway.policy.shell import programs
from gateway.policy.shell.argv import SPECS, normalize_name
from gateway.policy.shell.evaluation import NAME_TAKING
from gateway.policy.shell.interp.programs import INTERPRETERS, language_of
from gateway.policy.shell.patches import patch_run
from gateway.policy.shell.programruns import ProgramRuns, placeholders
from gateway.policy.shell.scanned import INHERITED, Feed, replace_access, replace_command
from gateway.policy.shell.special import SPECIAL_PROGRAMS, SpecialRun, special_program
from gateway.policy.shell.words import Word
from gateway.policy.shell.wrappers import (
    EVALS,
    FINDS,
    FOREIGN_SHELLS,
    SHELLS,
    SUB_WRAPPERS,
    TRAPS,
    WRAPPERS,
    Unwrapped,
    sub_wrapper,
    unwrap,
)

LOOKAHEADS = 8
_SYNTAX_IN_NAME = frozenset(" \t\n;&|<>()`")
_DIGIT = re.compile(r"\d")
SUB_WRAPPER_PROGRAMS = frozenset(program for program, _ in SUB_WRAPPERS)
RUNNERS = frozenset({
    *WRAPPERS, *SHELLS, *FOREIGN_SHELLS, *EVALS, *TRAPS, *FINDS, *programs.CODE_OPTIONS,
    *(program for program, _ in SUB_WRAPPERS), *SPECIAL_PROGRAMS, *INTERPRETERS, "source",
    ".", "git",
})
"""Programs that run code named in their arguments: an unknown program's argument naming
one of these may be the start of a command the program runs."""


class CommandDispatch(ProgramRuns):
    """The whole walk: what `scan` runs."""

    def emit(self, words: Sequence[Word], via: tuple[str, ...], depth: int, feed: Feed, *,
             appended: bool = False) -> None:
        if not words:
            return
        self.tick()
        head = words[0]
        if head.dynamic or head.globby or not head.text:
            self.fail(f"command name computed at run time: {head.text}")
            return
        if not _SYNTAX_IN_NAME.isdisjoint(head.text):
            self.fail(f"a command name holds shell syntax: {head.text[:60]}")
            return
        if any(w.globby for w in words):
            words = [head, *(self.settle(w) for w in words[1:])]
        if "/" in head.text and self.own_script(words, via, depth, appended):
            self.record(words, via, False)
            self.program_file(words, via, depth, appended)
            return
        name = normalize_name(head.text)
        alias = self.aliases.get(head.text)
        if alias is not None and f"alias {head.text}" not in via:
            self.expand_alias(head.text, alias, words, via, depth)
            return
        wrapper = WRAPPERS.get(name)
        if wrapper is not None:
            self.wrapped(name, unwrap(name, wrapper, words), words, via, depth, feed, appended)
            return
        spec = SPECS.get(name)
        sub = sub_wrapper(name, words, spec.values if spec is not None else frozenset()) if (
            name in SUB_WRAPPER_PROGRAMS) else None
        if sub is not None:
            sub_spec, at = sub
            inner_words = [Word(f"{name} {words[at].text}" if at else name), *words[at + 1 :]]
            self.wrapped(name, unwrap(name, sub_spec, inner_words), words, via, depth, feed,
                         appended)
            return
        language = language_of(name) if (name in INTERPRETERS or (
            name not in SHELLS and _DIGIT.search(name))) else None
        if name in SHELLS or name in FOREIGN_SHELLS:
            self.shell(name, words, via, depth, feed, appended)
        elif language is not None:
            self.interpreter(name, language, words, via, depth, feed, appended)
        elif name in EVALS:
            self.evaluate(words, via, depth, feed)
        elif name in TRAPS:
            self.trap(words, via, depth)
        elif name in ("source", "."):
            self.record(words, via, True)
            self.source(words, via, depth, feed)
        elif name == "alias":
            self.record(words, via, False)
            self.define_aliases(words)
        elif name == "git":
            self.git(words, via, depth, feed, appended)
        elif name in FINDS:
            self.find(words, via, depth, feed, appended)
        else:
            self.program(name, words, via, depth, feed, appended)

    def program(self, name: str, words: Sequence[Word], via: tuple[str, ...], depth: int,
                feed: Feed, appended: bool) -> None:
        if name in NAME_TAKING or name in ("hash", "enable", "fc", "compgen", "complete",
                                           "bind"):
            self.builtin(name, words, via, depth)
            if name == "read":
                self.read_lines(words, feed)
            return
        special = special_program(name, words)
        opaque = special is None and name not in programs.CODE_OPTIONS and (
            name not in programs.INERT)
        index = self.record(words, via, False, appended=appended, opaque=opaque)
        if name == "patch":
            self.patched(patch_run(name, words[1:]), feed, self.commands[index].text)
        self.carried(name, special, via, depth, feed, index)
        if name == "shift" or (name == "set" and any(
                w.text == "--" or not w.text.startswith(("-", "+")) for w in words[1:])):
            self.positional_changed()
        if "/" in words[0].text and not words[0].dynamic and special is None:
            self.program_file(words, via, depth, appended)
        if opaque:
            self.look_ahead(name, words, via, depth, feed)

    def read_lines(self, words: Sequence[Word], feed: Feed) -> None:
        """`read -r f` fed a known list (find's selection, a literal): f holds one of its
        lines (after the walk's first binding, which took it as unknown)."""
        args = [w.text for w in words[1:]]
        names = [a for a in args if not a.startswith("-")]
        if len(names) != 1 or any(a not in ("-r",) for a in args if a.startswith("-")):
            return
        lines: list[Word] | None = None
        if feed.pipe is not None:
            produced = self.produced(*feed.pipe)
            if produced.text is None:
                lines = self.output_words(*feed.pipe)
            feed = produced
        if feed.text is not None and "\\" not in feed.text:  # read drops NUL bytes
            lines = [Word(line.strip(), verbatim=True)
                     for line in feed.text.replace("\0", "").splitlines()]
        if lines is None or any(w.dynamic and not w.pattern for w in lines):
            return
        bound = self.variables.bound.get(names[0], [])
        if bound and bound[-1].dynamic and not bound[-1].pattern:
            bound.pop()  # the unknown value builtin() gave it
        for line in [*lines, Word("")]:  # at the end of its input, read empties it
            self.bind(names[0], line)
        self.variables.dominated.add(names[0])  # inside the loop it reads for

    def look_ahead(self, name: str, words: Sequence[Word], via: tuple[str, ...],
                   depth: int, feed: Feed) -> None:
        """An unknown program may be a wrapper: where one of its arguments names a program
        that runs code (a shell, a wrapper, git, ...), the rest is analysed as what it
        might run. Bounded: at most LOOKAHEADS such readings per command."""
        found = 0
        for k in range(1, len(words)):
            word = words[k]
            if word.dynamic or word.globby or word.text.startswith("-"):
                continue
            if normalize_name(word.text) not in RUNNERS:
                continue
            found += 1
            if found > LOOKAHEADS:
                return
            start, opened = len(self.commands), len(self.accesses)
            self.speculating += 1
            try:
                self.emit(words[k:], (*via, f"{name}?"), depth, feed)
            finally:
                self.speculating -= 1
            for index in range(start, len(self.commands)):
                self.commands[index] = replace_command(self.commands[index], speculative=True)
            for index in range(opened, len(self.accesses)):
                self.accesses[index] = replace_access(self.accesses[index])

    def carried(self, name: str, special: SpecialRun | None, via: tuple[str, ...], depth: int,
                feed: Feed, index: int = -1) -> None:
        """Code a program's arguments carry: command lines, argvs, script files, stdin."""
        if special is None:
            return
        if (special.scripts or special.commands or special.script_files or special.problem
                or special.stdin_language):
            self.commands[index] = replace_command(self.commands[index],
                                                   carries_code=f"{name} runs code named in its "
                                                   "arguments")
        self.fail(special.problem)
        for path in special.reads:
            self.access("read", path, name)
        for path in special.writes:
            self.access("write", path, name)
        for script in special.scripts:  # what a program runs inherits its stdin
            self.code(script, via, depth, name, feed)
        for argv in special.commands:
            self.emit(argv, (*via, name), depth, feed, appended=True)
        for path in special.script_files:
            self.script_file(path, via, depth, name)
        if special.stdin_language:
            self.stdin_code(special.stdin_language, feed, via, depth, name)

    def wrapped(self, name: str, found: Unwrapped, words: Sequence[Word],
                via: tuple[str, ...], depth: int, feed: Feed, appended: bool) -> None:
        index = self.record(words, via, True, appended=appended)
        self.fail(found.problem)
        loads = ""
        for key, value in found.assignments:
            self.bind(key, value)
            loads = self.environment(key, value, via, depth) or loads
        if loads:
            self.commands[index] = replace_command(self.commands[index], carries_code=loads)
        self.carried(name, special_program(name, words), via, depth, feed, index)
        inner_via = (*via, name)
        for script in found.scripts:
            self.code(script, inner_via, depth, name, feed)
        if found.shell_argv is not None:
            self.shell("sh", [Word("sh"), *found.shell_argv], inner_via, depth, feed, False)
        if found.inner:
            if name == "xargs":
                self.xargs(words, found.inner, inner_via, depth, feed)
                return
            inner = placeholders(name, words, found.inner)
            self.emit(inner, inner_via, depth, feed, appended=appended or found.appends)
        elif name == "parallel" and not found.scripts and not found.problem:
            self.stdin_code("bash", feed, via, depth, "parallel")

    def expand_alias(self, name: str, alias: Word, words: Sequence[Word],
                     via: tuple[str, ...], depth: int) -> None:
        if alias.dynamic or any(w.dynamic for w in words[1:]):
            self.fail(f"alias {name} or its arguments are computed at run time")
            return
        rest = " ".join(_quote(w.text) for w in words[1:])
        self.script(f"{alias.text} {rest}", (*via, f"alias {name}"), depth + 1, INHERITED)

    def define_aliases(self, words: Sequence[Word]) -> None:
        for word in words[1:]:
            name, eq, value = word.text.partition("=")
            if word.dynamic:
                self.fail("alias defined with text computed at run time")
            elif eq:
                self.aliases[name] = Word(value)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
