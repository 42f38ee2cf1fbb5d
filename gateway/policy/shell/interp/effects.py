"""What an interpreter invocation runs (`InlineCode`) and what its code does (`CodeEffects`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.policy.shell.words import Word


@dataclass(frozen=True)
class InlineCode:
    """How one interpreter invocation gets its program, from its argv alone."""

    language: str
    """Key for `analyse_code`: python, python2, perl, ruby, javascript, php, lua, ..."""
    source: str | None = None
    """Program text given in the arguments (-c, -e, -r, `deno eval`, ...), several pieces joined
    by newlines; also option values that are code (perl -M'Foo;...' , -F/pattern/, php -B)."""
    from_stdin: bool = False
    """The interpreter (also) reads program text from stdin: no script (`python`, `python -`,
    `perl`, `php`), or an interactive prompt after the program (`python -i`, `node -i`)."""
    script_path: Word | None = None
    """The program is this file (`python foo.py`): its code is not analysed here."""
    dynamic: bool = False
    """Part of `source` is computed at run time (a shell expansion): it cannot be known."""
    module: Word | None = None
    """`python -m NAME`: a module runs as the program; decided by the interpreter's name."""
    loads: tuple[Word, ...] = ()
    """Modules or files that options make the interpreter run before the program (node -r,
    --import, perl -M, ruby -r, lua -l, php -d auto_prepend_file, ...), as given."""
    args: tuple[Word, ...] = ()
    """The words passed to the program (sys.argv[1:], @ARGV, process.argv.slice(2), ...)."""
    reads: tuple[Word, ...] = ()
    """Files the interpreter reads line by line because of its options (perl/ruby -n/-p)."""
    writes: tuple[Word, ...] = ()
    """Files the interpreter rewrites because of its options (perl/ruby -i)."""
    unparseable: str = ""
    """Why the invocation cannot be known statically ('' when it can)."""


@dataclass(frozen=True)
class CodeEffects:
    """What a program does, as far as it can be known without running it."""

    commands: tuple[tuple[Word, ...], ...] = ()
    """Argv of every process the code starts; unknown parts are dynamic words. File operations
    the code performs itself appear as their command (shutil.rmtree(p) is rm -r -f -- p)."""
    scripts: tuple[str, ...] = ()
    """Shell strings the code runs through a shell (os.system, shell=True, popen): Bash source."""
    reads: tuple[Word, ...] = ()
    """Files the code opens for reading."""
    writes: tuple[Word, ...] = ()
    """Files the code writes, truncates, creates, moves onto or removes."""
    unparseable: str = ""
    """'' or why the code cannot be known statically."""


@dataclass
class FoundEffects:
    """What an analyser has found so far in a small program (awk, sed), as literal strings."""

    commands: list[str] = field(default_factory=list)
    """Shell strings the program runs."""
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    problem: str = ""
    """Why the program cannot be known statically ('' when it can)."""

    def effects(self) -> CodeEffects:
        return CodeEffects(scripts=tuple(self.commands),
                           reads=tuple(Word(r) for r in self.reads),
                           writes=tuple(Word(w) for w in self.writes),
                           unparseable=self.problem)
