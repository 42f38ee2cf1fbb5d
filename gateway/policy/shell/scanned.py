"""What a scan of a Bash string finds: the simple commands it would run (with their
redirections and settings), the files they read and write, the data flows between them, and
what a command reads on stdin; plain frozen values, built by the walk (walkstate.py and the
classes on it) and read by the evaluator."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Literal

from gateway.policy.shell.argv import Invocation, analyze
from gateway.policy.shell.words import Word


@dataclass(frozen=True)
class Redirect:
    op: str
    """`<`, `>`, `>>`, `<>`, `>|`, `&>`, `&>>`, `>&`, `<&`, `<<<` or `<<`."""
    target: Word
    fd: str = ""


@dataclass(frozen=True)
class SimpleCommand:
    name: str
    text: str
    via: tuple[str, ...] = ()
    """Wrappers and shells this command was found inside, outermost first."""
    runs_other: bool = False
    """A wrapper or shell whose real work is another simple command in the scan."""
    words: tuple[Word, ...] = ()
    """The argv as bash would pass it, name first."""
    redirects: tuple[Redirect, ...] = ()
    assignments: tuple[tuple[str, Word], ...] = ()
    """NAME=value settings in front of the command."""
    opaque: bool = False
    """A program the gateway does not know: its arguments may name a command it runs."""
    carries_code: str = ""
    """Why this command runs code it names or loads (an option or variable holding a command,
    PATH, PYTHONPATH, git -c, ...): no allow rule covers it."""
    speculative: bool = False
    """Found by reading an unknown program's arguments as a command it might run: a rule
    that matches it is uncertain, decided as the policy's `unparseable`."""
    appended: bool = False
    """Arguments are added at run time (xargs, find -exec): options may be among them."""
    option_words: tuple[Word, ...] = ()
    """`words` as read for options once the walk ended: a variable whose every value is
    known and none begins with '-' is no option (`rm -f "$f"` with f=$(mktemp))."""

    @cached_property
    def invocation(self) -> Invocation:
        """The argv as options and operands; computed only for commands a rule names."""
        words = self.option_words or self.words
        return analyze(self.name, words[1:], appended=self.appended)


@dataclass(frozen=True)
class Access:
    """A file a command reads or writes (operands, options, redirections, scripts)."""

    mode: Literal["read", "write"]
    path: Word
    command: str
    """The command that opens it, for explanations."""
    possible: bool = False
    """An unknown program's argument: it may name a file the program opens, or not."""


@dataclass(frozen=True)
class Scan:
    commands: tuple[SimpleCommand, ...]
    unparseable: str = ""
    """Why the command cannot be fully known ('' when it can)."""
    flows: tuple[tuple[tuple[int, int], ...], ...] = ()
    """Data flows (pipelines, process substitutions): per flow, the command index range of
    each stage in order; output of a stage flows into every later one."""
    refused: str = ""
    """Set when the command is over the size cap or the analysis over its time budget:
    such a call is denied whatever the policy says."""
    accesses: tuple[Access, ...] = ()
    cwds: tuple[str, ...] = ()
    """Directories relative paths may be resolved against: the session's, then every
    `cd DIR` (and `-C DIR`) the command names."""
    cwd_unknown: bool = False
    """A `cd` to a directory computed at run time: relative paths may be anywhere."""
    unsafe_for_allow: str = ""
    """Why no allow rule may cover this command even if every simple command matches one
    (a variable that makes programs run code, set for the rest of the command)."""
    glob_options: frozenset[str] = frozenset()
    """Glob options (dotglob, nocaseglob, globstar, ...) the command may turn on."""
    creates: str = ""
    """Why files may appear that no recorded write names (an unknown program, a build, an
    archive, a symbolic link), '' when none can: a glob that matches nothing now then
    matches nothing when the command runs, and bash passes it as it is."""

    def feeds(self, producer: int, consumer: int) -> bool:
        for flow in self.flows:
            seen = False
            for start, end in flow:
                if start <= consumer < end and seen:
                    return True
                if start <= producer < end:
                    seen = True
        return False


@dataclass(frozen=True)
class Feed:
    """What a command reads on stdin, as far as it is known."""

    text: str | None = None
    """Known literal input (a here-doc, a here-string, echo's output)."""
    unknown: str = ""
    """Why the input cannot be known; with text None and unknown '' stdin is inherited."""
    path: Word | None = None
    """A file redirected to stdin."""
    pipe: tuple[int, int] | None = None
    """Commands whose output is piped in (resolved only when a reader needs it)."""


INHERITED = Feed()


def replace_command(command: SimpleCommand, **changes: object) -> SimpleCommand:
    return replace(command, **changes)  # type: ignore[arg-type]


def replace_access(access: Access, **changes: object) -> Access:
    """The access with `changes` (none given: made a possible one)."""
    return replace(access, **(changes or {"possible": True}))  # type: ignore[arg-type]


def replace_word(word: Word, **changes: object) -> Word:
    return replace(word, **changes)  # type: ignore[arg-type]
