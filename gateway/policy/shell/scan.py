"""Every simple command a Bash string would run, found with tree-sitter-bash.

The walk visits lists, pipelines, subshells, groups, compound statements, substitutions and
function bodies generically (any node may hold commands). It follows code into shell strings
(sh -c, eval, trap, su -c, env -S, aliases, `!` git aliases, code-carrying options and
environment variables), into script files a shell or `source` is asked to run (read from
disk, bounded), into what a shell reads on stdin when the text is a known literal, and
through wrappers. Whatever cannot be known (a computed command name or option, a shell fed
by another program, a parse error, code bash evaluates from a value) makes the scan
`unparseable`, which policies deny (or ask) while a Bash deny rule exists.

Cost is linear in the command: one parse per shell string, no pairwise tables, a size cap
and a time budget after which the scan is refused (and the call denied).
"""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Sequence

from gateway.policy.shell.dispatch import CommandDispatch
from gateway.policy.shell.filecreation import creates_unknown_names
from gateway.policy.shell.files import DISK, Files
from gateway.policy.shell.globs import options_set
from gateway.policy.shell.interp.programs import interpreter_base
from gateway.policy.shell.scanned import (
    INHERITED,
    Access,
    Feed,
    Redirect,
    Scan,
    SimpleCommand,
    replace_command,
    replace_word,
)
from gateway.policy.shell.walkstate import RUNS_OTHERS, OverBudget, WalkState, special_name
from gateway.policy.shell.words import Word

__all__ = ["Access", "Feed", "Redirect", "Scan", "SimpleCommand", "scan"]

MAX_COMMAND_BYTES = 256 * 1024
TIME_BUDGET_S = 2.0
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def scan(command: str, cwd: str = "", *, files: Files = DISK,
         budget_s: float = TIME_BUDGET_S, max_bytes: int = MAX_COMMAND_BYTES) -> Scan:
    size = len(command.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        return Scan((), refused=f"the command is {size} bytes, over the analysis cap of "
                                f"{max_bytes // 1024} KiB")
    # A lone surrogate (valid in JSON, not in UTF-8) reaches bash as U+FFFD, as Claude Code's
    # runtime encodes it.
    command = _LONE_SURROGATE.sub("\ufffd", command)
    walker = CommandDispatch(cwd, files, time.monotonic() + budget_s)
    walker.cwds.append(cwd or "/")
    refused = ""
    collecting = gc.isenabled()
    gc.disable()  # the walk allocates but frees nothing; collections would rescan it all
    try:
        if "\\\r" in command:
            # bash escapes the carriage return: no line continuation, the next line runs on
            # its own (`echo ok \<CR><LF>cat .env`); the parser joins the lines.
            walker.fail("a backslash before a carriage return, which bash and the parser "
                        "read differently")
        walker.script(command, (), 0, INHERITED)
        walker.run_deferred()
        walker.path_programs()
        walker.fail(walker.hazards.problem())
        walker.fail(walker.missing_script_problem())
        walker.fail(walker.missing_program_problem())
        walker.fail(walker.project_code_problem())
    except OverBudget:
        refused = f"analysis took longer than its {budget_s:g} s budget"
    except RecursionError:
        walker.fail("the command is nested too deeply to analyse")
    finally:
        if collecting:
            gc.enable()
    walker.settle_cwds()
    walker.settle_produced()
    accesses = tuple(walker.expanded_accesses())  # first: it marks what arithmetic may set
    commands = tuple(walker.option_free(walker.commands))
    cwds = tuple(dict.fromkeys(walker.cwds))
    options = options_set(((c.name, c.words) for c in commands), walker.variables.bound,
                          files.environment)
    if walker.settled:
        commands = _checked_settled(commands, walker, files, cwds, options)
    creates = _creates(commands)
    return Scan(commands, walker.problem, tuple(walker.flows), refused, accesses, cwds,
                walker.cwd_unknown, walker.unsafe_for_allow, options, creates)


def _checked_settled(commands: tuple[SimpleCommand, ...], walker: WalkState, files: Files,
                     cwds: Sequence[str], options: frozenset[str]
                     ) -> tuple[SimpleCommand, ...]:
    """The globs the walk took for no option, checked against the whole command: nothing
    in it may create a name beginning with '-' first, no `cd` may reach a directory where
    one expands to such a name (with the glob options the command sets). Otherwise each is
    a possible option again, and a program that already read them as no option (an
    interpreter: `perl -n *` with a file named `-e...`) makes the command unparseable."""
    def plain_names(word: Word) -> bool:
        for cwd in cwds:
            found = walker.glob(word.text, cwd, options)
            if found is None or any(special_name(n) and n != word.text for n in found):
                return False
        return True

    creating = [k for k, c in enumerate(commands) if c.name not in RUNS_OTHERS
                and creates_unknown_names(c.name, c.words, globs_too=False)]
    writers = {*creating, *walker.dash_writers}
    clear = not (walker.cwd_unknown or len(writers) > 1)
    out: list[SimpleCommand] = []
    for index, command in enumerate(commands):
        # what a program creates itself comes after bash expanded its arguments
        valid = clear and writers <= {index}
        words = list(command.words)
        changed = False
        for k, word in enumerate(words):
            if word.plain_names and not (valid and plain_names(word)):
                words[k] = replace_word(word, plain_names=False)
                changed = True
        if changed:
            if interpreter_base(command.name) is not None:
                walker.fail(f"`{command.text[:80]}`: a glob may expand to an option")
            command = replace_command(command, words=tuple(words))
        out.append(command)
    return tuple(out)


def _creates(commands: Sequence[SimpleCommand], globs_too: bool = True) -> str:
    """Why the command may create files no recorded write names ('' when it cannot)."""
    for command in commands:
        if command.name in RUNS_OTHERS:
            continue  # what it runs is a command of the scan
        if creates_unknown_names(command.name, command.words, globs_too):
            return f"`{command.text[:80]}` may create files"
    return ""
