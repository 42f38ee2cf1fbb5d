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
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Literal

from tree_sitter import Language, Node, Parser

from gateway.policy.shell import programs
from gateway.policy.shell.argv import SPECS, Invocation, analyze, normalize_name
from gateway.policy.shell.evaluation import NAME_TAKING, EvalHazards
from gateway.policy.shell.files import DISK, Files, resolve
from gateway.policy.shell.fileuse import CHANGES_ONLY, creates_unknown_names, file_uses
from gateway.policy.shell.globs import GLOB_CHARS, alternatives, is_glob, is_pattern, options_set
from gateway.policy.shell.interp.programs import (
    INTERPRETERS,
    OPAQUE_LANGUAGES,
    interpreter_base,
    language_of,
)
from gateway.policy.shell.lexer import lex
from gateway.policy.shell.producers import literal_output
from gateway.policy.shell.special import SPECIAL_PROGRAMS, SpecialRun, special_program
from gateway.policy.shell.variables import Variables
from gateway.policy.shell.words import Word, word_value
from gateway.policy.shell.wrappers import (
    EVALS,
    FINDS,
    FOREIGN_SHELLS,
    SHELL_VALUE_OPTS,
    SHELLS,
    SUB_WRAPPERS,
    TRAPS,
    WRAPPERS,
    Unwrapped,
    sub_wrapper,
    unwrap,
)

if TYPE_CHECKING:
    from gateway.policy.shell.interp.effects import CodeEffects
    from gateway.policy.shell.xargs import Xargs

MAX_DEPTH = 8
"""Shell strings inside shell strings (sh -c "sh -c '...'") followed this deep."""
MAX_NESTING = 200
"""Syntax nesting (subshells, substitutions) followed this deep; deeper is unparseable."""
LOOKAHEADS = 8
MAX_COMMAND_BYTES = 256 * 1024
TIME_BUDGET_S = 2.0
_SYNTAX_IN_NAME = frozenset(" \t\n;&|<>()`")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_LEAF_WORDS = frozenset({"word", "raw_string", "ansi_c_string", "number"})
"""Argument node types that cannot hold a command (no substitution inside)."""


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

    @cached_property
    def invocation(self) -> Invocation:
        """The argv as options and operands; computed only for commands a rule names."""
        return analyze(self.name, self.words[1:], appended=self.appended)


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


class _OverBudget(Exception):
    pass


@lru_cache(maxsize=1)
def _parser() -> Parser:
    from gateway.policy.shell.grammar import bash_language  # loaded when Bash is scanned

    return Parser(Language(bash_language()))


def _parse(source: str) -> Node:
    """The syntax tree of `source`, parsed inside a subshell.

    tree-sitter-bash takes quadratic time on a long pipeline at the top level of a program
    (a 3,000-stage pipeline: 300 ms) but linear time inside `( ... )` (40 ms). The wrapped
    parse is used when it is exactly one subshell holding the text; otherwise (an unbalanced
    `)` in the text) the text is parsed as it is.
    """
    data = source.encode("utf-8", "surrogateescape")
    wrapped = _parser().parse(b"(" + data + b"\n)").root_node
    children = wrapped.named_children
    if (len(children) == 1 and children[0].type == "subshell" and not wrapped.has_error
            and children[0].end_byte == len(data) + 3):
        return children[0]
    return _parser().parse(data).root_node


def scan(command: str, cwd: str = "", *, files: Files = DISK,
         budget_s: float = TIME_BUDGET_S, max_bytes: int = MAX_COMMAND_BYTES) -> Scan:
    size = len(command.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        return Scan((), refused=f"the command is {size} bytes, over the analysis cap of "
                                f"{max_bytes // 1024} KiB")
    # A lone surrogate (valid in JSON, not in UTF-8) reaches bash as U+FFFD, as Claude Code's
    # runtime encodes it.
    command = _LONE_SURROGATE.sub("\ufffd", command)
    walker = _Walker(cwd, files, time.monotonic() + budget_s)
    walker.cwds.append(cwd or "/")
    refused = ""
    collecting = gc.isenabled()
    gc.disable()  # the walk allocates but frees nothing; collections would rescan it all
    try:
        walker.script(command, (), 0, INHERITED)
        walker.fail(walker.hazards.problem())
        walker.fail(walker.missing_script_problem())
    except _OverBudget:
        refused = f"analysis took longer than its {budget_s:g} s budget"
    except RecursionError:
        walker.fail("the command is nested too deeply to analyse")
    finally:
        if collecting:
            gc.enable()
    commands = tuple(walker.commands)
    accesses = tuple(walker.expanded_accesses())
    cwds = tuple(dict.fromkeys(walker.cwds))
    options = options_set(((c.name, c.words) for c in commands), walker.variables.bound,
                          files.environment)
    if walker.settled:
        commands = _checked_settled(commands, walker, files, cwds, options)
    creates = _creates(commands)
    return Scan(commands, walker.problem, tuple(walker.flows), refused, accesses, cwds,
                walker.cwd_unknown, walker.unsafe_for_allow, options, creates)


@dataclass
class _Walker:
    cwd: str
    files: Files
    deadline: float
    commands: list[SimpleCommand] = field(default_factory=list)
    flows: list[tuple[tuple[int, int], ...]] = field(default_factory=list)
    problem: str = ""
    aliases: dict[str, Word] = field(default_factory=dict)
    git_aliases: dict[str, Word] = field(default_factory=dict)
    hazards: EvalHazards = field(default_factory=EvalHazards)
    ticks: int = 0
    nesting: int = 0
    accesses: list[Access] = field(default_factory=list)
    variables: Variables = field(default_factory=Variables)
    """Values the command binds to names (for paths that use them)."""
    top: int = -1
    """The node id of the command's own top level (bindings there run unconditionally)."""
    cwds: list[str] = field(default_factory=list)
    cwd_unknown: bool = False
    unsafe_for_allow: str = ""
    speculating: int = 0
    """Inside a reading of an unknown program's arguments as a command it might run."""
    venvs: dict[int, str] = field(default_factory=dict)
    """Command index -> the virtual environment it creates (`python -m venv DIR`)."""
    missing_scripts: list[tuple[int, str, str]] = field(default_factory=list)
    """(index of the command that runs it, its path, why) for scripts not on disk."""
    globbed: dict[tuple[str, str, frozenset[str]], list[str] | None] = field(
        default_factory=dict)
    settled: bool = False
    """A glob was taken for plain names (checked again once the walk is over)."""
    created: bool = False
    """A command walked so far may create files no recorded write names."""
    dash_writers: set[int] = field(default_factory=set)
    """Commands that may create a file whose name begins with '-' (a glob may then expand
    to an option); -1 for a redirection or code, which may run before any command."""
    outputs: dict[int, list[Word]] = field(default_factory=dict)
    """What a command writes to stdout when that is a set of paths (find's selection)."""

    def access(self, mode: Literal["read", "write"], path: Word, command: str,
               possible: bool = False, creates: bool = True, own: int = -1) -> None:
        """`creates`: a write may create the file (not rm, chmod: they change what is);
        `own`: the command whose own run writes it (after bash expanded its words)."""
        if (path.text or path.dynamic) and path.text != "-" and not path.process:
            if mode == "write" and creates and _special_name_possible(path):
                self.dash_writers.add(own)
            self.variables.used(path)
            self.accesses.append(Access(mode, path, command[:200], possible))

    def expanded_accesses(self) -> list[Access]:
        """Each access with the values its `$NAME`s may hold, known once the whole command
        has been walked (a later binding may run first, in a loop); from the environment
        the command inherits where a use may come first (`cat "$AGENT_GATEWAY_AUDIT_KEY_FILE"`)."""
        for name in self.hazards.referenced:
            self.variables.unknown(name)  # arithmetic may assign it: (( f = 1 )), let
        cwds = None if self.cwd_unknown else dict.fromkeys(self.cwds)
        out: list[Access] = []
        for access in self.accesses:
            if not access.path.dynamic:
                out.append(access)
                continue
            for path in self.variables.alternatives(access.path, self.files.environment, cwds):
                out.append(access if path is access.path else _replace_access(access, path=path))
        return out

    def bind(self, name: str, value: Word, node: Node | None = None, depth: int = 1) -> None:
        """A value bound to a shell variable (unknown when dynamic)."""
        self.variables.bind(name, value, node is not None and depth == 0 and self.top_level(node))

    def top_level(self, node: Node) -> bool:
        """Runs unconditionally in the command's own shell: no list, loop, branch, function,
        subshell or substitution between it and the top."""
        parent = node.parent
        while parent is not None and parent.id != self.top:
            if parent.type not in ("declaration_command", "variable_assignments"):
                return False
            parent = parent.parent
        return parent is not None

    def fail(self, why: str) -> None:
        if why and not self.problem:
            self.problem = why

    def tick(self) -> None:
        self.ticks += 1
        if self.ticks & 127 == 0 and time.monotonic() > self.deadline:
            raise _OverBudget

    # -- scripts -------------------------------------------------------------------------
    def script(self, source: str, via: tuple[str, ...], depth: int, feed: Feed) -> None:
        if depth > MAX_DEPTH:
            self.fail("shell strings nested too deeply")
            return
        joined, bodies = lex(source)
        root = _parse(joined)
        if depth == 0 and self.top < 0:
            self.top = root.id
        if root.has_error:
            self.fail("the command does not parse as Bash")
        elif bodies and _heredoc_texts(root) != [_tabless(b) for b in bodies]:
            # tree-sitter misreads some here-documents (a body line starting with a
            # backslash): never analyse a text other than the one bash runs.
            self.fail("a here-document does not parse as bash reads it")
        self.visit(root, via, depth, feed)

    def script_file(self, path: Word, via: tuple[str, ...], depth: int, what: str) -> None:
        self.access("read", path, f"{what} {path.text}")
        if path.dynamic or path.globby:
            self.fail(f"{what} runs a script named at run time")
            return
        found = self.files.script(path.text, self.cwd)
        if found.text is None and found.missing and self.speculating:
            return  # a guess at what an unknown program runs: no code of its own to read
        if found.text is None and found.missing:
            # Decided when the whole command is known (`finish`): whether any step of it
            # could put the script there, whatever order they run in.
            self.missing_scripts.append((len(self.commands) - 1, resolve(path.text, self.cwd),
                                         f"{what} runs {path.text}, which cannot be "
                                         f"analysed: {found.why}"))
            return
        if found.text is None:
            self.fail(f"{what} runs {path.text}, which cannot be analysed: {found.why}")
            return
        self.script(found.text, (*via, what), depth + 1, INHERITED)

    def missing_script_problem(self) -> str:
        """A script that is not on disk is no code to analyse if no step of the command
        could put it there: nothing in it writes a file (in any order: `&` and pipelines
        run steps side by side). Else it is unknown code, and the command unparseable."""
        for runner, target, why in self.missing_scripts:
            # a virtual environment's creator writes a `bin/activate` that only sets variables
            made = {k for k, venv in self.venvs.items()
                    if target == os.path.join(venv, "bin", "activate")}
            writers = [c for k, c in enumerate(self.commands) if k != runner and k not in made
                       and c.name not in programs.WRITE_NOTHING]
            creators = {self.commands[k].text[:200] for k in made}
            if writers or any(a.mode == "write" or (a.possible and a.command not in creators)
                              for a in self.accesses):
                return why
        return ""

    def code(self, text: Word, via: tuple[str, ...], depth: int, what: str) -> None:
        """A shell string found in an option, a variable or an alias."""
        if text.dynamic:
            self.fail(f"{what} runs text computed at run time")
        elif text.text.strip():
            self.script(text.text, (*via, what), depth + 1, INHERITED)

    def stdin_code(self, language: str, feed: Feed, via: tuple[str, ...], depth: int,
                   what: str) -> None:
        """A program that reads its code from stdin: only a known literal is analysed."""
        if feed.pipe is not None:
            feed = self.produced(*feed.pipe)
        if feed.text is not None:
            if language == "bash":
                self.script(feed.text, (*via, what), depth + 1, INHERITED)
            else:
                self.foreign_code(language, feed.text, via, depth, what)
            return
        elif feed.path is not None:
            if language == "bash":
                self.script_file(feed.path, via, depth, what)
            else:
                self.fail(f"{what} reads {language} code from a file")
        elif feed.unknown:
            self.fail(f"{what} reads code from {feed.unknown}")

    def foreign_code(self, language: str, text: str, via: tuple[str, ...], depth: int,
                     what: str, feed: Feed = INHERITED) -> None:
        """Code in another language fed to its interpreter: analysed where a reader exists."""
        # The readers load on first use: most commands carry no code, and the hook starts cold.
        from gateway.policy.shell.awk import analyse_awk
        from gateway.policy.shell.interp import analyse_code
        from gateway.policy.shell.sed import analyse_sed

        if language == "awk":
            effects = analyse_awk(text)
        elif language == "sed":
            effects = analyse_sed(text)
        elif language in OPAQUE_LANGUAGES or language == "make":
            self.fail(f"{what} runs {language} code that is not analysed")
            return
        else:
            effects = analyse_code(language, text)
        self.effects(effects, what, via, depth, feed)

    def effects(self, effects: CodeEffects, what: str, via: tuple[str, ...], depth: int,
                feed: Feed) -> None:
        """What a program in another language does, applied: its commands and shell strings
        are analysed like the command's own, its files checked like redirections."""
        self.fail(effects.unparseable)
        inner_via = (*via, what)
        for argv in effects.commands:
            self.emit(list(argv), inner_via, depth, feed)
        for script in effects.scripts:
            self.script(script, inner_via, depth + 1, feed)
        for path in effects.reads:
            self.access("read", path, what)
        for path in effects.writes:
            self.access("write", path, what)

    def interpreter(self, name: str, language: str, words: Sequence[Word],
                    via: tuple[str, ...], depth: int, feed: Feed, appended: bool) -> None:
        """python -c, perl -e, node -e, ...: the code given is analysed (interp package)."""
        # Imported on first use: most commands run no interpreter, and the hook starts cold.
        from gateway.policy.shell.interp.invocation import inline_code

        inline = inline_code(name, words[1:])
        index = self.record(words, via, inline is not None, appended=appended,
                            code=_code_words(words, inline.source if inline else None))
        if inline is None:
            return  # runs no program of its own (--version, -m pip, a package script)
        self.fail(inline.unparseable)
        for path in inline.reads:
            self.access("read", path, name)
        for path in inline.writes:
            self.access("write", path, name, own=index)
        if inline.script_path is not None:
            self.access("read", inline.script_path, self.commands[index].text)
        if inline.source is not None or inline.from_stdin or inline.loads:
            self.commands[index] = _replace(self.commands[index], carries_code=(
                f"{name} runs code given in its arguments or input"))
        if inline.dynamic:
            self.fail(f"{name} runs code computed at run time")
        elif inline.source is not None:
            from gateway.policy.shell.interp import analyse_code

            self.effects(analyse_code(inline.language, inline.source), name, via, depth, feed)
        if inline.from_stdin:
            self.stdin_code(inline.language, feed, via, depth, name)

    # -- tree walk -----------------------------------------------------------------------
    def visit(self, node: Node, via: tuple[str, ...], depth: int, feed: Feed) -> None:
        self.ticks += 1
        if self.ticks & 127 == 0 and time.monotonic() > self.deadline:
            raise _OverBudget
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            self.fail("the command is nested too deeply to analyse")
        else:
            self.dispatch(node, via, depth, feed)
        self.nesting -= 1  # an exception abandons the whole walk, so no finally is needed

    def dispatch(self, node: Node, via: tuple[str, ...], depth: int, feed: Feed) -> None:
        kind = node.type
        if kind == "command":
            self.command(node, via, depth, feed)
        elif kind == "pipeline":
            self.pipeline(node, via, depth, feed)
        elif kind == "redirected_statement":
            self.redirected(node, via, depth, feed)
        elif kind == "declaration_command":
            self.declaration(node, via, depth, feed)
        elif kind == "variable_assignment":
            self.assignment(node, via, depth)
            self.children(node, via, depth, feed)
        elif kind == "for_statement":
            done = self.substituted_values(node, via, depth, feed)
            bound = self.for_loop(node, done)
            for child in node.named_children:
                if child.id not in done:
                    self.visit(child, via, depth, feed)
            if bound and not (depth == 0 and self.top_level(node)):
                self.variables.dominated.discard(bound)  # the loop itself may not run
        elif kind == "file_redirect":
            # A redirect with no command: `$(< f)` (bash reads f: `$(cat f)`), `< f` alone
            redirect, _ = self.file_redirect(node, via, depth, feed)
            if redirect is not None:
                self.redirect_access(redirect, "$(<)")
        elif kind == "while_statement":
            before = set(self.variables.dominated)
            self.children(node, via, depth, feed)
            # `while read f`: f holds a line only inside the loop
            self.variables.dominated.intersection_update(before)
        else:
            if kind in ("arithmetic_expansion", "c_style_for_statement", "subscript") or (
                    kind == "compound_statement" and node.child_count
                    and node.children[0].type == "(("):
                self.hazards.context(node)
            elif kind == "test_command":
                self.hazards.test_operands(node)
            elif kind == "expansion":
                self.hazards.expansion(node)
                assigned = _ASSIGNING.match(_text(node))
                if assigned:  # ${f:=x}, ${f=x} bind f
                    self.variables.unknown(assigned.group(1))
            self.children(node, via, depth, feed)

    def children(self, node: Node, via: tuple[str, ...], depth: int, feed: Feed) -> None:
        for child in node.named_children:
            self.visit(child, via, depth, feed)

    def span(self, node: Node, via: tuple[str, ...], depth: int, feed: Feed) -> tuple[int, int]:
        start = len(self.commands)
        self.visit(node, via, depth, feed)
        return start, len(self.commands)

    def pipeline(self, node: Node, via: tuple[str, ...], depth: int, feed: Feed,
                 tail: Feed | None = None) -> None:
        """`tail`: the stdin of the last stage when a redirect follows it (`a | sh < f`)."""
        stages: list[tuple[int, int]] = []
        stage_feed = feed
        children = node.named_children
        for k, child in enumerate(children):
            if tail is not None and k == len(children) - 1:
                stage_feed = tail
            stage = self.span(child, via, depth, stage_feed)
            stages.append(stage)
            stage_feed = Feed(pipe=stage)
        self.flows.append(tuple(stages))

    def with_tail(self, node: Node, via: tuple[str, ...], depth: int, feed: Feed,
                  tail: Feed) -> int:
        """Visit a pipeline or list whose trailing redirects tree-sitter hangs on the whole;
        bash applies them to its last command. Returns where that command's range starts."""
        if node.type == "pipeline":
            start = len(self.commands)
            self.pipeline(node, via, depth, feed, tail)
            return self.flows[-1][-1][0] if self.flows and self.flows[-1] else start
        children = node.named_children
        for child in children[:-1]:
            self.visit(child, via, depth, feed)
        last = children[-1] if children else None
        if last is not None and last.type in ("pipeline", "list"):
            return self.with_tail(last, via, depth, feed, tail)
        start = len(self.commands)
        if last is not None:
            self.visit(last, via, depth, tail)
        return start

    def produced(self, start: int, end: int) -> Feed:
        """What commands[start:end] write to a pipe: known only for literal echo/printf."""
        texts: list[str] = []
        for command in self.commands[start:end]:
            output = literal_output(command.name, command.words, command.runs_other)
            if output is None:
                return Feed(unknown=f"the output of `{command.text[:80]}`")
            texts.append(output)
        if not texts:
            return Feed(unknown="the output of a command that is not a simple command")
        return Feed(text="".join(texts))

    def redirected(self, node: Node, via: tuple[str, ...], depth: int, feed: Feed) -> None:
        body = node.child_by_field_name("body")
        redirects: list[Redirect] = []
        body_feed = feed
        later: list[Node] = []
        producers: list[tuple[int, int]] = []
        for child in node.named_children:
            if body is not None and child.id == body.id:
                continue
            if child.type == "heredoc_redirect":
                body_feed = self.heredoc(child, via, depth, feed, later)
            elif child.type == "herestring_redirect":
                body_feed = self.herestring(child, via, depth, feed)
            elif child.type == "file_redirect":
                redirect, produced = self.file_redirect(child, via, depth, feed)
                if redirect is not None:
                    redirects.append(redirect)
                    if redirect.op in ("<", "<>") and redirect.fd in ("", "0"):
                        body_feed = (Feed(pipe=produced) if produced is not None
                                     else Feed(path=redirect.target))
                if produced is not None:
                    producers.append(produced)
            else:
                later.append(child)
        start = len(self.commands)
        owner = start
        if body is not None and body.type in ("pipeline", "list"):
            owner = self.with_tail(body, via, depth, feed, body_feed)
        elif body is not None:
            self.visit(body, via, depth, body_feed)
        fed = (start, len(self.commands))
        if redirects:
            self.attach_redirects(owner, redirects)
        for producer in producers:
            self.flows.append((producer, fed))
        next_feed = Feed(pipe=fed)
        for part in later:
            consumer = self.span(part, via, depth, next_feed)
            self.flows.append((fed, consumer))

    def attach_redirects(self, start: int, redirects: list[Redirect]) -> None:
        """A redirect on `cmd > f` belongs to cmd (the first command of the body)."""
        owner = self.commands[start].text if start < len(self.commands) else ""
        for redirect in redirects:
            self.redirect_access(redirect, owner)
        if start < len(self.commands):
            first = self.commands[start]
            self.commands[start] = _replace(first, redirects=(*first.redirects, *redirects))

    def redirect_access(self, redirect: Redirect, owner: str) -> None:
        op, target = redirect.op, redirect.target
        if op in (">&", "<&") and (target.text.isdigit() or target.text == "-"):
            return  # duplicates a descriptor
        if op in ("<", "<>"):
            self.access("read", target, f"{owner} {op} {target.text}")
        if op in (">", ">>", ">|", "&>", "&>>", "<>", ">&"):
            self.access("write", target, f"{owner} {op} {target.text}")

    def heredoc(self, node: Node, via: tuple[str, ...], depth: int, feed: Feed,
                later: list[Node]) -> Feed:
        quoted = False
        text = ""
        dynamic = False
        for part in node.named_children:
            if part.type == "heredoc_start":
                quoted = any(c in _text(part) for c in "'\"\\")
            elif part.type == "heredoc_body":
                text = _text(part)
                if not quoted:
                    dynamic = any(c.type != "heredoc_content" for c in part.named_children)
                    self.children(part, via, depth, feed)
            elif part.type != "heredoc_end":
                later.append(part)
        if dynamic:
            return Feed(unknown="a here-document with text computed at run time")
        return Feed(text=text)

    def herestring(self, node: Node, via: tuple[str, ...], depth: int, feed: Feed) -> Feed:
        self.children(node, via, depth, feed)
        parts = [word_value(part) for part in node.named_children]
        if not parts or any(p.dynamic for p in parts):
            return Feed(unknown="a here-string with text computed at run time")
        return Feed(text=" ".join(p.text for p in parts) + "\n")

    def file_redirect(self, node: Node, via: tuple[str, ...], depth: int, feed: Feed
                      ) -> tuple[Redirect | None, tuple[int, int] | None]:
        op = next((_text(c) for c in node.children if not c.is_named), "")
        fd = next((_text(c) for c in node.named_children if c.type == "file_descriptor"), "")
        targets = [c for c in node.named_children if c.type != "file_descriptor"]
        if not targets:
            return None, None
        target = targets[-1]
        if target.type == "process_substitution":
            produced = self.span(target, via, depth, feed)
            return Redirect(op, word_value(target), fd), produced
        self.visit(target, via, depth, feed)
        return Redirect(op, word_value(target), fd), None

    def declaration(self, node: Node, via: tuple[str, ...], depth: int, feed: Feed) -> None:
        """export/declare/local/readonly/typeset NAME[=VALUE]..."""
        keyword = _text(node.children[0]) if node.children else "declare"
        args: list[tuple[str, bool]] = []
        for child in node.named_children:
            if child.type == "variable_assignment":
                name_node = child.child_by_field_name("name")
                args.append((_text(name_node) if name_node is not None else "", False))
                self.assignment(child, via, depth)
            else:
                value = word_value(child)
                args.append((value.text, value.dynamic))
        self.hazards.name_arguments(keyword, args)
        references = _nameref([t for t, _ in args])
        for child in node.named_children:
            if child.type != "variable_assignment":
                value = word_value(child)
                if not value.text.startswith("-"):  # `local f`: a new, empty variable
                    self.bind(value.text, Word(""))
            elif references:  # declare -n f=g: $f is g's value
                name_node = child.child_by_field_name("name")
                self.variables.unknown(_text(name_node) if name_node is not None else "")
        if any(t.startswith("-") and "i" in t[1:] for t, _ in args if not t.startswith("--")):
            # declare -i: every later assignment to these names is evaluated arithmetically
            self.hazards.referenced.update(t.split("=", 1)[0] for t, _ in args
                                           if not t.startswith("-"))
        words = [Word(keyword), *(Word(text, dynamic=dyn) for text, dyn in args)]
        self.record(words, via, False)
        self.children(node, via, depth, feed)

    def assignment(self, node: Node, via: tuple[str, ...], depth: int) -> None:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        name = _text(name_node) if name_node is not None else ""
        value = word_value(value_node) if value_node is not None else Word("")
        if value_node is not None and value_node.type == "array":
            value = Word(_text(value_node), dynamic=any(
                word_value(c).dynamic for c in value_node.named_children))
        if name_node is not None and name_node.type == "subscript":
            self.hazards.subscript(_text(name_node))
            name = _text(name_node).split("[", 1)[0]
        # $((...)) always yields a number: evaluating it again runs nothing
        numeric = value_node is not None and value_node.type == "arithmetic_expansion"
        if numeric:
            self.hazards.assign(name, "0", False)
        else:
            self.hazards.assign(name, value.text, value.dynamic)
        appends = any(c.type == "+=" for c in node.children)
        if appends or (value_node is not None and value_node.type == "array") or (
                name_node is not None and name_node.type == "subscript"):
            self.variables.unknown(name)  # f+=x, arrays: not one literal value
        else:
            self.bind(name, value, node, depth)
        self.unsafe_for_allow = self.unsafe_for_allow or self.environment(name, value, via, depth)

    def substituted_values(self, node: Node, via: tuple[str, ...], depth: int, feed: Feed
                           ) -> dict[int, list[Word]]:
        """`for f in $(cmd)`: each substitution walked first, with the words its output
        splits into when that is known (find's selection, ls given files, literal echo)."""
        done: dict[int, list[Word]] = {}
        for child in node.children_by_field_name("value"):
            if child.type != "command_substitution":
                continue
            start, end = self.span(child, via, depth, feed)
            done[child.id] = self.output_words(start, end) or [word_value(child)]
        return done

    def output_words(self, start: int, end: int) -> list[Word] | None:
        """What commands[start:end] print, split into words; None when not known."""
        produced = self.produced(start, end) if end > start else Feed(unknown="nothing")
        if produced.text is not None:
            return [Word(t, verbatim=True) for t in produced.text.split()]
        found = [self.outputs.get(k) for k in range(start, end)]
        if not found or any(f is None for f in found):
            return None
        return [w for f in found if f is not None for w in f]

    def for_loop(self, node: Node, substituted: dict[int, list[Word]]) -> str:
        """Binds the loop variable to each value; returns its name when the body's uses see
        only those values (and it was not bound unconditionally before)."""
        variable = node.child_by_field_name("variable")
        if variable is None:
            return ""
        values = [v for c in node.children_by_field_name("value")
                  for v in substituted.get(c.id, [word_value(c)])]
        dynamic = any(v.dynamic or v.globby for v in values)
        self.hazards.assign(_text(variable), " ".join(v.text for v in values), dynamic)
        if not values:
            self.variables.unknown(_text(variable))  # `for f; do`: the positional parameters
        name = _text(variable)
        for value in values:
            self.bind(name, value)
        if values and not any(v.dynamic and not v.pattern for v in values) and (
                name not in self.variables.dominated):
            self.variables.dominated.add(name)
            return name
        return ""

    def environment(self, name: str, value: Word, via: tuple[str, ...], depth: int) -> str:
        """NAME=value that makes programs run code: analysed, or unparseable. Returns why
        no allow rule may cover the command it is set for ('' when it is harmless)."""
        kind = programs.CODE_ENV.get(name)
        if kind is None and name.startswith(programs.CODE_ENV_PREFIXES):
            kind = "opaque"
        if kind == "shell":
            self.code(value, via, depth, f"{name}=")
        elif kind == "file":
            self.script_file(value, via, depth, f"{name}=")
        elif kind == "opaque":
            self.fail(f"{name}= makes programs run code that is not analysed")
        if kind is not None or name == "PATH" or name.startswith("GIT_"):
            return f"{name}= makes programs run or load code it names"
        return ""

    # -- simple commands -----------------------------------------------------------------
    def command(self, node: Node, via: tuple[str, ...], depth: int, feed: Feed) -> None:
        words: list[Word] = []
        assignments: list[tuple[str, Word]] = []
        others: list[Node] = []
        own_redirects: list[Redirect] = []
        loads = ""
        own_feed = feed
        for child in node.named_children:
            kind = child.type
            if kind == "command_name":
                inner = child.named_children
                if inner:
                    words.append(word_value(inner[0]))
                    if inner[0].type not in _LEAF_WORDS:
                        others.append(child)
            elif kind == "variable_assignment":
                name_node = child.child_by_field_name("name")
                value_node = child.child_by_field_name("value")
                name = _text(name_node) if name_node is not None else ""
                value = word_value(value_node) if value_node is not None else Word("")
                assignments.append((name, value))
                self.bind(name, value)  # the command's own environment (eval, source, f())
                loads = self.environment(name, value, via, depth) or loads
                if value_node is not None:
                    others.append(value_node)
            elif kind == "herestring_redirect":
                own_feed = self.herestring(child, via, depth, feed)
            elif kind == "file_redirect":
                redirect, _ = self.file_redirect(child, via, depth, feed)
                if redirect is not None:
                    own_redirects.append(redirect)
            else:
                folded = _folded(child) if kind == "command_substitution" else None
                if folded is not None:
                    words.extend(folded)
                else:
                    words.append(word_value(child))
                if kind not in _LEAF_WORDS:
                    others.append(child)
        start = len(self.commands)
        self.emit(words, via, depth, own_feed)
        end = len(self.commands)
        if own_redirects:
            self.attach_redirects(start, own_redirects)
        if start < end and (assignments or loads):
            first = self.commands[start]
            self.commands[start] = _replace(first, assignments=tuple(assignments),
                                            carries_code=loads or first.carries_code)
        for child in others:
            if child.type == "process_substitution":
                produced = self.span(child, via, depth, feed)
                if _text(child).startswith("<("):
                    self.flows.append((produced, (start, end)))
                else:
                    self.flows.append(((start, end), produced))
            elif child.named_children:
                self.visit(child, via, depth, feed)

    def record(self, words: Sequence[Word], via: tuple[str, ...], runs_other: bool, *,
               appended: bool = False, opaque: bool = False,
               code: frozenset[int] = frozenset()) -> int:
        """`code`: positions of words that are program text (`-e CODE`), never files."""
        name = normalize_name(words[0].text)
        text = " ".join(w.text for w in words)
        venv = programs.venv_created(name, [w.text for w in words[1:]])
        if venv is not None and not any(w.dynamic or w.globby for w in words):
            self.venvs[len(self.commands)] = resolve(venv, self.cwd)
        self.commands.append(SimpleCommand(name, text, via, runs_other, tuple(words),
                                           opaque=opaque, appended=appended))
        self.file_uses(name, [w for i, w in enumerate(words) if i not in code], text)
        index = len(self.commands) - 1
        if name in LISTERS and not self.created:
            from gateway.policy.shell.listings import listed  # ls, grep: on first use

            found = listed(name, words, self.names_now, self.is_dir)
            if found is not None:
                self.outputs[index] = found
        if not self.created and name not in _RUNS_OTHERS:
            self.created = creates_unknown_names(name, words)
        return index

    def names_now(self, word: Word) -> list[str] | None:
        """The names a word stands for now: itself, or a glob's matches in every
        directory the command has reached (None when not known)."""
        if word.dynamic or self.cwd_unknown:
            return None
        if not is_glob(word):
            return [word.text]
        names: list[str] = []
        for cwd in dict.fromkeys(self.cwds or [self.cwd or "/"]):
            found = self.glob(word.text, cwd)
            if found is None:
                return None
            names.extend(found)
        return list(dict.fromkeys(names))

    def glob(self, pattern: str, cwd: str, options: frozenset[str] = frozenset()
             ) -> list[str] | None:
        """files.glob, once per pattern, directory and options in a scan."""
        key = (pattern, cwd, options)
        if key not in self.globbed:
            self.globbed[key] = self.files.glob(pattern, cwd, options)
        return self.globbed[key]

    def is_dir(self, name: str) -> bool:
        return any(self.files.is_dir(name, cwd) for cwd in self.cwds or [self.cwd or "/"])

    def file_uses(self, name: str, words: Sequence[Word], text: str) -> None:
        if name in _SCRIPT_RUNNERS:
            return  # their script is recorded where it is read
        words = _brace_expanded(words)
        uses = file_uses(name, words)
        if uses is None:
            # An unknown program: any argument may be a file it opens.
            for word in words[1:]:
                if not word.text.startswith("-"):
                    self.access("read", word, text, possible=True)
                    continue
                value = word.text.partition("=")[2]
                if value and not value.startswith("-"):
                    self.access("read", Word(value, word.dynamic, word.lead_dynamic,
                                             word.globby), text, possible=True)
            return
        for mode, path in uses:
            self.access(mode, path, text, creates=name not in CHANGES_ONLY,
                        own=len(self.commands) - 1)
        self.directories(name, words)

    def directories(self, name: str, words: Sequence[Word]) -> None:
        """cd DIR, git -C DIR, make -C DIR: later relative paths may be under DIR."""
        targets: list[Word] = []
        if name in ("cd", "pushd"):
            operands = [w for w in words[1:] if not w.text.startswith("-")]
            targets = operands[:1] or [Word("~")]
        elif name in ("git", "make", "tar", "env"):
            targets = [words[i + 1] for i in range(1, len(words) - 1)
                       if words[i].text in ("-C", "--directory", "--chdir")]
        for target in targets:
            if target.dynamic or target.globby:
                self.cwd_unknown = True
            else:
                self.cwds.append(resolve(target.text, self.cwds[-1] if self.cwds else self.cwd))

    def settle(self, word: Word) -> Word:
        """A glob that expands, in every directory the command has reached so far, to no
        word beginning with '-' is no option (checked again once the whole command is
        known: a later step may create such a name, or `cd` elsewhere, first)."""
        if not word.globby or word.dynamic or word.plain_names or self.cwd_unknown:
            return word
        cwds = dict.fromkeys(self.cwds or [self.cwd or "/"])
        for cwd in cwds:
            found = self.glob(word.text, cwd)
            if found is None or any(_special_name(n) and n != word.text for n in found):
                return word
        self.settled = True
        return _replace_word(word, plain_names=True)

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
            self.evaluate(words, via, depth)
        elif name in TRAPS:
            self.trap(words, via, depth)
        elif name in ("source", "."):
            self.record(words, via, True)
            self.source(words, via, depth, feed)
        elif name == "alias":
            self.record(words, via, False)
            self.define_aliases(words)
        elif name == "git":
            self.git(words, via, depth, appended)
        elif name in FINDS:
            self.find(words, via, depth, appended)
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
        self.carried(name, special, via, depth, feed, index)
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
        if feed.text is not None and "\\" not in feed.text:
            lines = [Word(line.strip(), verbatim=True) for line in feed.text.splitlines()]
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
                self.commands[index] = _replace(self.commands[index], speculative=True)
            for index in range(opened, len(self.accesses)):
                self.accesses[index] = _replace_access(self.accesses[index])

    def carried(self, name: str, special: SpecialRun | None, via: tuple[str, ...], depth: int,
                feed: Feed, index: int = -1) -> None:
        """Code a program's arguments carry: command lines, argvs, script files, stdin."""
        if special is None:
            return
        if (special.scripts or special.commands or special.script_files or special.problem
                or special.stdin_language):
            self.commands[index] = _replace(self.commands[index],
                                            carries_code=f"{name} runs code named in its "
                                            "arguments")
        self.fail(special.problem)
        for path in special.reads:
            self.access("read", path, name)
        for path in special.writes:
            self.access("write", path, name)
        for script in special.scripts:
            self.code(script, via, depth, name)
        for argv in special.commands:
            self.emit(argv, (*via, name), depth, INHERITED, appended=True)
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
            self.commands[index] = _replace(self.commands[index], carries_code=loads)
        self.carried(name, special_program(name, words), via, depth, feed, index)
        inner_via = (*via, name)
        for script in found.scripts:
            self.code(script, inner_via, depth, name)
        if found.shell_argv is not None:
            self.shell("sh", [Word("sh"), *found.shell_argv], inner_via, depth, feed, False)
        if found.inner:
            if name == "xargs":
                self.xargs(words, found.inner, inner_via, depth, feed)
                return
            inner = _placeholders(name, words, found.inner)
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

    def shell(self, name: str, words: Sequence[Word], via: tuple[str, ...], depth: int,
              feed: Feed, appended: bool) -> None:
        code: Word | None = None
        stdin = False
        i = 1
        while i < len(words):
            word, text = words[i], words[i].text
            if word.may_be_option:
                self.fail(f"{name} options computed at run time")
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
        if code is not None and operand is None and not code.text and appended:
            code = Word("", dynamic=True)  # xargs sh -c: the script is the appended input
        self.record(words, via, True)
        inner_via = (*via, name)
        if name in FOREIGN_SHELLS and (code is not None or operand is not None or
                                       feed != INHERITED):
            self.fail(f"{name} runs code in a language that is not analysed")
            return
        if code is not None:
            added = [str(k) for k in range(len(positional))
                     if str(k) not in self.variables.dominated]
            for k, value in enumerate(positional):
                self.bind(str(k), value)
            self.variables.dominated.update(added)  # the script's own $0, $1, ...
            self.code(code, via, depth, name)
            self.variables.dominated.difference_update(added)
        elif appended:
            self.fail(f"{name} gets its script from arguments added at run time")
        elif operand is not None and not stdin:
            self.script_file(operand, inner_via, depth, name)
        else:
            self.stdin_code("bash", feed, via, depth, name)

    def evaluate(self, words: Sequence[Word], via: tuple[str, ...], depth: int) -> None:
        self.record(words, via, True)
        parts = list(words[1:])
        if parts and parts[0].text == "--":
            parts = parts[1:]
        if any(w.dynamic for w in parts):
            self.fail("eval runs text computed at run time")
        elif parts:
            self.script(" ".join(w.text for w in parts), (*via, "eval"), depth + 1, INHERITED)

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
            names = _name_args(name, args)
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
            references = _nameref(texts)
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

    def git(self, words: Sequence[Word], via: tuple[str, ...], depth: int,
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
            self.commands[index] = _replace(self.commands[index], carries_code=(
                "git runs a program named in its configuration or options"))
        for script in run.scripts:
            self.code(script, via, depth, "git")
        listed = gitcmd.listed_files(run.argv)
        if listed is not None:
            self.outputs[index] = listed

    def find(self, words: Sequence[Word], via: tuple[str, ...], depth: int,
             appended: bool) -> None:
        """find: the commands -exec runs and the files -delete removes, on the files it
        selects (a pattern: see findcmd); what it prints, for a consumer such as xargs."""
        from gateway.policy.shell.findcmd import analyse_find  # on first use

        run = analyse_find(words)
        index = self.record(words, via, False, appended=appended)
        for path in run.deletes:
            self.access("write", path, self.commands[index].text)
        for argv in run.commands:
            self.emit(argv, (*via, words[0].text), depth, INHERITED)
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
                self.emit(_placeholders("xargs", words, tuple(inner)), via, depth, feed,
                          appended=True)
            else:
                self.emit([*inner, unknown], via, depth, feed, appended=True)
        elif options.marker:
            for value in values[:MAX_RUNS]:
                self.emit([put(w, options.marker, value) for w in inner], via, depth, feed)
            if len(values) > MAX_RUNS:
                self.emit(_placeholders("xargs", words, tuple(inner)), via, depth, feed,
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


_DIGIT = re.compile(r"\d")
def _code_words(words: Sequence[Word], source: str | None) -> frozenset[int]:
    """Positions of the words that gave an interpreter its program text (`-e CODE`, `-rCODE`,
    `--eval=CODE`): the analysis reads them as code, and `[1]` in them is no glob."""
    if not source:
        return frozenset()
    joined = f"\n{source}\n"
    found = set()
    for index, word in enumerate(words[1:], start=1):
        text = word.text
        if not text or word.dynamic:
            continue
        tails = (text[2:], text.partition("=")[2]) if text.startswith("-") else ()
        if any(f"\n{piece}\n" in joined for piece in (text, *tails) if piece):
            found.add(index)
    return frozenset(found)


_ASSIGNING = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?=")


def _nameref(texts: Sequence[str]) -> bool:
    """declare -n / local -n: the names refer to other variables."""
    return any(t.startswith("-") and not t.startswith("--") and "n" in t[1:] for t in texts)
_SCRIPT_RUNNERS = frozenset({*SHELLS, *FOREIGN_SHELLS, "source", ".", "eval", "trap"})
SUB_WRAPPER_PROGRAMS = frozenset(program for program, _ in SUB_WRAPPERS)
_RUNS_OTHERS = frozenset({*WRAPPERS, *SHELLS, *EVALS, *TRAPS, "source", "."})
LISTERS = frozenset({"ls", "grep", "egrep", "fgrep", "rg"})
RUNNERS = frozenset({
    *WRAPPERS, *SHELLS, *FOREIGN_SHELLS, *EVALS, *TRAPS, *FINDS, *programs.CODE_OPTIONS,
    *(program for program, _ in SUB_WRAPPERS), *SPECIAL_PROGRAMS, *INTERPRETERS, "source",
    ".", "git",
})
"""Programs that run code named in their arguments: an unknown program's argument naming
one of these may be the start of a command the program runs."""


def _special_name(name: str) -> bool:
    """A file name a program may read as more than a name: an option, a perl open mode."""
    return name[:1] in ("-", "|", "<", ">", "+", " ", "\t") or name.endswith("|")


def _special_name_possible(path: Word) -> bool:
    """Whether a file written at `path` may have a name a program reads as more than a
    name (see `_special_name`)."""
    name = path.text.rstrip("/").rsplit("/", 1)[-1]
    return _special_name(name) or (path.dynamic and (
        bool(path.pattern) or any(c in name for c in "$`"))) or (
        is_glob(path) and name[:1] in ("*", "?", "[", "{"))


def _checked_settled(commands: tuple[SimpleCommand, ...], walker: _Walker, files: Files,
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
            if found is None or any(_special_name(n) and n != word.text for n in found):
                return False
        return True

    creating = [k for k, c in enumerate(commands) if c.name not in _RUNS_OTHERS
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
                words[k] = _replace_word(word, plain_names=False)
                changed = True
        if changed:
            if interpreter_base(command.name) is not None:
                walker.fail(f"`{command.text[:80]}`: a glob may expand to an option")
            command = _replace(command, words=tuple(words))
        out.append(command)
    return tuple(out)


def _creates(commands: Sequence[SimpleCommand], globs_too: bool = True) -> str:
    """Why the command may create files no recorded write names ('' when it cannot)."""
    for command in commands:
        if command.name in _RUNS_OTHERS:
            continue  # what it runs is a command of the scan
        if creates_unknown_names(command.name, command.words, globs_too):
            return f"`{command.text[:80]}` may create files"
    return ""


def _heredoc_texts(root: Node) -> list[str]:
    """Here-document bodies in source order, as tree-sitter read them."""
    found: list[tuple[int, str]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "heredoc_body":
            found.append((node.start_byte, _tabless(_text(node))))
            continue
        stack.extend(node.named_children)
    return [text for _, text in sorted(found)]


def _tabless(body: str) -> str:
    """A body compared without leading tabs (`<<-` strips them; tree-sitter's node for
    such a body starts after the first line's tabs)."""
    return "\n".join(line.lstrip("\t") for line in body.split("\n")).rstrip("\n")


def _folded(substitution: Node) -> list[Word] | None:
    """`$(echo a b)` with literal arguments: the words bash splits its output into."""
    inner = substitution.named_children
    if len(inner) != 1 or inner[0].type != "command":
        return None
    parts = inner[0].named_children
    if not parts or parts[0].type != "command_name" or not parts[0].named_children:
        return None
    words = [word_value(parts[0].named_children[0])]
    for part in parts[1:]:
        if part.type not in _LEAF_WORDS and part.type not in ("string", "concatenation"):
            return None
        words.append(word_value(part))
    name = normalize_name(words[0].text)
    output = literal_output(name, words, False) if name in ("echo", "printf") else None
    if output is None:
        return None
    return [Word(piece, globby=any(c in piece for c in "*?[")) for piece in output.split()]


def _placeholders(name: str, words: Sequence[Word], inner: tuple[Word, ...]) -> list[Word]:
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


def _name_args(name: str, args: Sequence[Word]) -> list[tuple[str, bool]]:
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


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _replace_access(access: Access, **changes: object) -> Access:
    from dataclasses import replace

    return replace(access, **(changes or {"possible": True}))  # type: ignore[arg-type]


def _brace_expanded(words: Sequence[Word]) -> Sequence[Word]:
    """The words as bash's brace expansion makes them, before anything else: `cp .env{,.bak}`
    is `cp .env .env.bak`, two operands, a source read."""
    if not any(w.globby and "{" in w.text and not w.dynamic for w in words[1:]):
        return words
    out = [words[0]]
    for word in words[1:]:
        found = alternatives(word.text) if word.globby and not word.dynamic else None
        if found is None or found == [word.text]:
            out.append(word)
            continue
        out.extend(_replace_word(word, text=alt, globby=is_pattern(alt), plain_names=False)
                   for alt in found)
    return out


def _replace_word(word: Word, **changes: object) -> Word:
    from dataclasses import replace

    return replace(word, **changes)  # type: ignore[arg-type]


def _replace(command: SimpleCommand, **changes: object) -> SimpleCommand:
    from dataclasses import replace

    return replace(command, **changes)  # type: ignore[arg-type]


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""
