"""What a parsed program does, collected as the analysers find it: the language-neutral half.

The analysers of JavaScript, Ruby, Perl, PHP and Lua read their trees and report here in one
vocabulary: a shell string run (`script`), a process started (`command`, an argv), a file
operation (`file_op`: the equivalent command plus its reads and writes, so `fs.rmSync(p,
{recursive: true})` is `rm -r -f -- p` and `Bash(rm -rf:*)` applies), a file opened by mode,
network access (`network`: a `curl URL` command), environment and directory changes, and why
the program cannot be known (`fail`). `effects()` turns it into a CodeEffects.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from gateway.policy.shell.interp.effects import CodeEffects
from gateway.policy.shell.interp.programs import language_of, program_name
from gateway.policy.shell.interp.settle import settle, uncertain
from gateway.policy.shell.interp.values import (
    UNKNOWN,
    Value,
    concat,
    static,
    to_bash,
    to_word,
)
from gateway.policy.shell.words import Word

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish", "csh",
                    "tcsh", "yash", "posh"})
_WRITE_MODE = frozenset("wax+c")


@dataclass(frozen=True)
class FileOp:
    """A call that acts on files, as the command that does the same."""

    command: tuple[str, ...]
    """The equivalent command; the path arguments follow `--`. () for none (reads, writes)."""
    paths: tuple[int, ...] = (0,)
    """Argument indexes of the paths, in the command's order; (-1,) for every argument."""
    reads: tuple[int, ...] = ()
    writes: tuple[int, ...] = ()
    """Indexes into `paths` of the paths read and written."""


RM = FileOp(("rm",), writes=(0,))
RM_F = FileOp(("rm", "-f"), writes=(0,))
RM_RF = FileOp(("rm", "-r", "-f"), writes=(0,))
RMDIR = FileOp(("rmdir",), writes=(0,))
MV = FileOp(("mv",), (0, 1), writes=(0, 1))
CP = FileOp(("cp",), (0, 1), reads=(0,), writes=(1,))
CP_R = FileOp(("cp", "-r"), (0, 1), reads=(0,), writes=(1,))
LN = FileOp(("ln",), (0, 1), writes=(1,))
LN_S = FileOp(("ln", "-s"), (0, 1), writes=(1,))
MKDIR = FileOp(("mkdir",), writes=(0,))
MKDIR_P = FileOp(("mkdir", "-p"), writes=(0,))
TOUCH = FileOp(("touch",), writes=(0,))
TRUNCATE = FileOp(("truncate",), writes=(0,))
CHMOD = FileOp(("chmod",), writes=(0,))
CHOWN = FileOp(("chown",), writes=(0,))
READ = FileOp((), reads=(0,))
WRITE = FileOp((), writes=(0,))


@dataclass
class Options:
    """How a process is started: what it reads on stdin, its environment, its directory."""

    stdin: Value | None = None
    """None: it inherits the interpreter's stdin; else the text the code feeds it (UNKNOWN
    when the code writes to the child's stdin as it runs)."""
    env: list[tuple[str, Value]] = field(default_factory=list)
    cwd: Value | None = None


class Collector:
    def __init__(self, language: str, cap: int) -> None:
        self.language = language
        self.budget = 4 * max(cap, 4096)
        self.commands: list[tuple[Word, ...]] = []
        self.scripts: list[str] = []
        self.reads: list[Word] = []
        self.writes: list[Word] = []
        self.problem = ""
        self.env: list[tuple[str, Value]] = []
        self.env_problem = ""
        self.chdir = False
        self.plumbing = ""
        """Why what the started programs read on stdin is unknown (stdin reopened), or ''."""

    def fail(self, why: str) -> None:
        if why and not self.problem:
            self.problem = f"{self.language} code {why}"

    def _charge(self, size: int) -> bool:
        self.budget -= size
        if self.budget < 0:
            self.fail("builds more command text than this analysis follows")
        return self.budget >= 0

    # -- processes ---------------------------------------------------------------------------
    def command(self, argv: list[Value], what: str, options: Options | None = None) -> None:
        if not argv:
            return
        options = options or Options()
        if not static(argv[0]):
            self.fail(f"{what} runs a program named at run time")
            return
        if options.env:
            argv = [("env",), *(concat((f"{k}=",), v) for k, v in options.env), *argv]
        if options.stdin is not None:
            self._fed(argv, options, what)
            return
        words = [to_word(v) for v in argv]
        if not self._charge(sum(len(w.text) for w in words)):
            return
        if options.cwd is not None:
            words = [words[0], *(uncertain(w) for w in words[1:])]
        self.commands.append(tuple(words))

    def _fed(self, argv: list[Value], options: Options, what: str) -> None:
        """A process the code writes to: a here-string in Bash says the same."""
        stdin = options.stdin or ()
        names = [program_name(text) for text in map(static, argv) if text]
        readers = [n for n in names if n in SHELLS or language_of(n) is not None]
        if readers and static(stdin) is None:
            self.fail(f"{what} feeds text computed at run time to {readers[0]}")
            return
        text = " ".join(to_bash(v) for v in argv) + " <<< " + to_bash(stdin)
        self.script((text,), what, Options(cwd=options.cwd))

    def script(self, value: Value, what: str, options: Options | None = None) -> None:
        text = static(value)
        if text is None:
            self.fail(f"{what} runs a shell string computed at run time")
            return
        options = options or Options()
        if options.stdin is not None:
            if static(options.stdin) is None:
                self.fail(f"{what} writes text computed at run time to a shell command")
                return
            text = "{ " + text + "\n} <<< " + to_bash(options.stdin)
        if options.cwd is not None:
            text = f"cd -- {to_bash(options.cwd)} && {{ {text}\n}}"
        if options.env:
            assigns = " ".join(to_bash(concat((f"{k}=",), v)) for k, v in options.env)
            text = f"env {assigns} sh -c {shlex.quote(text)}"
        if self._charge(len(text)):
            self.scripts.append(text)

    # -- files -------------------------------------------------------------------------------
    def file_op(self, spec: FileOp, args: list[Value]) -> None:
        """`args` are the call's arguments, UNKNOWN where not given or not known."""
        if spec.paths == (-1,):
            for arg in args:
                self.file_op(FileOp(spec.command, (0,), spec.reads, spec.writes), [arg])
            return
        paths = [args[i] if i < len(args) else UNKNOWN for i in spec.paths]
        if spec.command:
            self.command([*((w,) for w in spec.command), ("--",), *paths], spec.command[0])
        for index in spec.reads:
            self.read(paths[index])
        for index in spec.writes:
            self.write(paths[index])

    def read(self, value: Value) -> None:
        if self._charge(len(value)):
            self.reads.append(to_word(value))

    def write(self, value: Value) -> None:
        if self._charge(len(value)):
            self.writes.append(to_word(value))

    def opened(self, path: Value, mode: str | None) -> None:
        """A file opened with an fopen-style mode (r, w, a, x, c, +); None: not known."""
        if mode is None or "r" in mode or "+" in mode or not set(mode) & _WRITE_MODE:
            self.read(path)
        if mode is None or set(mode) & _WRITE_MODE:
            self.write(path)

    def network(self, url: Value, what: str) -> None:
        self.command([("curl",), url], what)

    # -- the environment of what the code starts --------------------------------------------
    def setenv(self, name: Value, value: Value) -> None:
        key = static(name)
        if key is None:
            self.env_problem = self.env_problem or "sets an environment variable named at run time"
        else:
            self.env.append((key, value))

    def env_changed(self, why: str) -> None:
        self.env_problem = self.env_problem or why

    # -- the result --------------------------------------------------------------------------
    def effects(self) -> CodeEffects:
        return settle(self, self.fail)


