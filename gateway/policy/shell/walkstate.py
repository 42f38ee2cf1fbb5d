"""The state of one walk over a Bash string, and its record keeping: the simple commands
found (`record`), the files they read and write (`access`, `file_uses`), the directories
they `cd` to, the variables they bind, globs as they expand now, and what recorded
commands print. The walk itself sits on top of it (scripts.py, syntaxwalk.py,
programruns.py, dispatch.py); its two recursive steps are declared here."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from tree_sitter import Node

from gateway.policy.shell import programs
from gateway.policy.shell.archives import EXTRACTORS
from gateway.policy.shell.argv import normalize_name
from gateway.policy.shell.equivalents import equivalent_commands
from gateway.policy.shell.evaluation import EvalHazards
from gateway.policy.shell.filecreation import CHANGES_ONLY, creates_unknown_names
from gateway.policy.shell.files import Files, ScriptText, resolve
from gateway.policy.shell.filetrees import tree
from gateway.policy.shell.fileuse import file_uses, response_files
from gateway.policy.shell.globs import alternatives, is_glob, is_pattern
from gateway.policy.shell.patches import PatchRun, patched_names
from gateway.policy.shell.producers import (
    literal_output,
    mktemp_made,
    produced_directories,
    produced_form,
)
from gateway.policy.shell.scanned import (
    INHERITED,
    Access,
    Feed,
    SimpleCommand,
    replace_access,
    replace_command,
    replace_word,
)
from gateway.policy.shell.variables import Variables
from gateway.policy.shell.words import Word
from gateway.policy.shell.wrappers import EVALS, FOREIGN_SHELLS, SHELLS, TRAPS, WRAPPERS

_STACK_ENTRY = re.compile(r"[+-][0-9]+")
"""`pushd +1`, `popd -0`: an entry of the directory stack, counted from either end."""
MAX_DEFERRALS = 4
"""Rounds of deferred scripts (a deferred script's own `cd "$x" && ./y`) followed."""
MAX_DIRECTORIES = 64
"""Working directories a command may be in that are followed; more is unknown."""
_REFERENCE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")



_PROC_DIRECTORY = re.compile(r"/proc/[^/]+/(cwd|root)(?=/|$)/?")


def through_proc(access: Access) -> Access:
    """`/proc/self/cwd/F` (or any process's: `/proc/$PPID/cwd`) is F in the directory the
    command is in, and `/proc/self/root/F` is /F: the path the rules are matched against."""
    found = _PROC_DIRECTORY.match(access.path.text)
    if found is None:
        return access
    rest = access.path.text[found.end():]
    text = ("/" + rest) if found.group(1) == "root" else (rest or ".")
    still = any(c in rest for c in "$`")
    return replace_access(access, possible=access.possible, path=replace_word(
        access.path, text=text, dynamic=access.path.dynamic and still,
        lead_dynamic=access.path.lead_dynamic and still))

class OverBudget(Exception):
    """The walk ran past its deadline."""


SCRIPT_RUNNERS = frozenset({*SHELLS, *FOREIGN_SHELLS, "source", ".", "eval", "trap"})
RUNS_OTHERS = frozenset({*WRAPPERS, *SHELLS, *EVALS, *TRAPS, "source", "."})
LISTERS = frozenset({"ls", "grep", "egrep", "fgrep", "rg"})


@dataclass
class WalkState:
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
    too_many_cwds: bool = False
    """More than MAX_DIRECTORIES directories reached (`cd a; cd b; ...` from each of the
    others): where relative paths lead is unknown, whatever settle_cwds finds."""
    cds_by_value: list[tuple[Word, int]] = field(default_factory=list)
    """Directory-changing targets that hold variables or substitutions (resolved by
    settle_cwds), with the count of commands walked when the change was reached."""
    trailing_cd_at: int = -1
    """The count of commands walked when a plain `cd`/`pushd` (not `git -C`) was reached."""
    repeating: int = 0
    """Inside a loop or a function body: a `cd` there may run again, after any other."""
    repeated_cds: list[Word] = field(default_factory=list)
    """`cd` targets that may run again (settle_cwds follows them from every directory)."""
    unsafe_for_allow: str = ""
    speculating: int = 0
    """Inside a reading of an unknown program's arguments as a command it might run."""
    venvs: dict[int, str] = field(default_factory=dict)
    """Command index -> the virtual environment it creates (`python -m venv DIR`)."""
    missing_scripts: list[tuple[int, str, str]] = field(default_factory=list)
    """(index of the command that runs it, its path, why) for scripts not on disk."""
    missing_programs: list[str] = field(default_factory=list)
    """The paths programs are run by that are not on disk."""
    script_texts: dict[tuple[str, str], ScriptText] = field(default_factory=dict)
    """Files read as scripts, by (path as named, the directory it was named from)."""
    deferred: dict[tuple[str, ...], Callable[[], None]] = field(default_factory=dict)
    """Scripts named by a relative path in a directory a `cd` reaches by value
    (`cd "$d" && ./run`): read once the walk has settled where that is (run_deferred)."""
    functions: set[str] = field(default_factory=set)
    """Names the command defines as shell functions (bash runs those, not a PATH lookup)."""
    path_values: list[tuple[Word, tuple[str, ...] | None]] = field(default_factory=list)
    """Values the command gives PATH (`export PATH=.:$PATH`, `PATH=bin ls`), each with the
    directories it may be given in (None: only known at run time)."""
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
            if mode == "write" and creates and special_name_possible(path):
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
                out.append(through_proc(access))
                continue
            for path in self.variables.alternatives(access.path, self.files.environment, cwds):
                out.append(through_proc(
                    access if path is access.path else replace_access(access, path=path)))
        return out

    def bind(self, name: str, value: Word, node: Node | None = None, depth: int = 1) -> None:
        """A value bound to a shell variable (unknown when dynamic)."""
        self.variables.bind(name, value, node is not None and depth == 0 and self.top_level(node),
                            settles=value.dynamic and produced_form(value.text))

    def top_level(self, node: Node) -> bool:
        """Runs unconditionally in the command's own shell: no loop, branch, function,
        subshell or substitution between it and the top, and in a list (`a && b`, `a || b`)
        only as its first part, which always runs (`t=$(mktemp) && cat "$t"`). tree-sitter
        hangs `a && b > f` as a redirection of the list; bash redirects b alone."""
        child, parent = node, node.parent
        while parent is not None and parent.id != self.top:
            first = parent.type == "list" and parent.named_children[:1] == [child]
            redirected_list = parent.type == "redirected_statement" and child.type == "list" and (
                parent.child_by_field_name("body") == child)
            if not (first or redirected_list) and parent.type not in (
                    "declaration_command", "variable_assignments"):
                return False
            child, parent = parent, parent.parent
        return parent is not None

    def fail(self, why: str) -> None:
        if why and not self.problem:
            self.problem = why

    def tick(self) -> None:
        self.ticks += 1
        if self.ticks & 127 == 0 and time.monotonic() > self.deadline:
            raise OverBudget

    # -- the walk's two recursive steps (syntaxwalk.py, dispatch.py) ----------------------
    def visit(self, node: Node, via: tuple[str, ...], depth: int, feed: Feed) -> None:
        """Walks a syntax node."""
        raise NotImplementedError

    def emit(self, words: Sequence[Word], via: tuple[str, ...], depth: int, feed: Feed, *,
             appended: bool = False) -> None:
        """Runs an argv: records it and follows what its program runs."""
        raise NotImplementedError

    # -- record keeping ------------------------------------------------------------------
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
        if not self.created and name not in RUNS_OTHERS:
            self.created = creates_unknown_names(name, words)
        for argv in equivalent_commands(name, words):
            self.emit(argv, (*via, name), 0, INHERITED)  # find d -delete is rm -r -f -- d
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
        if name in SCRIPT_RUNNERS:
            return  # their script is recorded where it is read
        words = brace_expanded(words)
        if name in EXTRACTORS:
            self.extracted(name, words, text)
        if name == "mktemp":
            self.made_by_mktemp(words, text)
            return
        uses = file_uses(name, words)
        if uses is None:
            # An unknown program: any argument may be a file it opens, to read or to write
            # (`cmake -E copy a .github/workflows/ci.yml`, `mount --bind a ci.yml`).
            for word in words[1:]:
                if word.text.startswith("-"):
                    value = word.text.partition("=")[2]
                    if not value or value.startswith("-"):
                        continue
                    word = Word(value, word.dynamic, word.lead_dynamic, word.globby)
                self.access("read", word, text, possible=True)
                self.access("write", word, text, possible=True, creates=False)
            for _, path in response_files(words):
                self.access("read", path, text, possible=True)
            return
        for mode, path in uses:
            self.access(mode, path, text, creates=name not in CHANGES_ONLY,
                        own=len(self.commands) - 1)
        self.directories(name, words)

    def _searched_by_cdpath(self, target: Word) -> bool:
        """`cd d` looks for d under each CDPATH directory first (`CDPATH=~ cd .ssh`): a
        relative target not spelled `./d` or `../d` is then somewhere only known when it
        runs."""
        text = target.text
        if text.startswith(("/", "~", "./", "../")) or text in (".", ".."):
            return False
        values = self._variable("CDPATH")
        return values is None or any(v.strip(":") for v in values)

    def made_by_mktemp(self, words: Sequence[Word], text: str) -> None:
        """mktemp makes a file (or directory) where its template, -p or TMPDIR say."""
        made = mktemp_made(words, self._variable("TMPDIR"))
        unknown = [Word("$TMPDIR/tmp.XXXXXXXXXX", dynamic=True)]  # TMPDIR computed at run time
        for path in made if made is not None else unknown:
            self.access("write", path, text, own=len(self.commands) - 1)

    def directories(self, name: str, words: Sequence[Word]) -> None:
        """cd DIR, git -C DIR, make -C DIR: later relative paths may be under DIR."""
        targets: list[Word] = []
        if name in ("cd", "pushd"):
            operands = [w for w in words[1:] if w.text == "-" or not w.text.startswith("-")]
            if name == "pushd" and (not operands or _STACK_ENTRY.fullmatch(operands[0].text)):
                return  # a directory already on the stack: one the command was in
            targets = operands[:1] or [Word("~")]
            if targets[0].text == "-":  # the directory it was in before: maybe inherited
                targets = [Word("${OLDPWD}", dynamic=True)]
            elif name == "cd" and self._searched_by_cdpath(targets[0]):
                targets = [Word("${CDPATH}/" + targets[0].text, dynamic=True)]
            if self.repeating:
                self.repeated_cds += targets
            else:
                self.trailing_cd_at = len(self.commands)
        elif name in ("git", "make", "tar", "env"):
            targets = [words[i + 1] for i in range(1, len(words) - 1)
                       if words[i].text in ("-C", "--directory", "--chdir")]
        for target in targets:
            if target.dynamic or target.globby:
                self.cwd_unknown = True
                self.cds_by_value.append((target, len(self.commands)))
            elif not self.too_many_cwds:
                # from any directory reached so far: a subshell's cd, a branch not taken
                # or a popd leaves the command elsewhere than the last one
                reached = dict.fromkeys(self.cwds)
                reached.update(dict.fromkeys([resolve(target.text, cwd) for cwd in reached]))
                self.too_many_cwds = len(reached) > MAX_DIRECTORIES
                self.cwd_unknown = self.cwd_unknown or self.too_many_cwds
                self.cwds[:] = list(reached)

    def scripts_at(self, path: str, *, system: bool = True
                   ) -> list[tuple[str, ScriptText]] | None:
        """What is at `path` from each directory the command may be in when it runs it (after
        `cd d`, `./run.sh` may be d's): (the path resolved, the file there); None when a
        relative path is under a directory only known at run time. `system=False` leaves out
        files in the system's program directories (unread: they are the programs named)."""
        if path.startswith(("/", "~")):
            cwds: Sequence[str] = ["/"]
        elif self.cwd_unknown:
            return None
        else:
            cwds = list(dict.fromkeys(self.cwds or [self.cwd or "/"]))
        places = [(resolve(path, cwd), cwd) for cwd in cwds]
        if not system:
            places = [(target, cwd) for target, cwd in places
                      if os.path.dirname(os.path.realpath(target)) not in programs.SYSTEM_BIN_DIRS]
        return [(target, self._script(path, cwd)) for target, cwd in places]

    def _script(self, path: str, cwd: str) -> ScriptText:
        """The file at `path` from `cwd`, read once per decision (own_script and program_file,
        a deferred lookup, a script run twice all ask): the disk does not change while the
        command is only being read."""
        found = self.script_texts.get((path, cwd))
        if found is None:
            found = self.script_texts[(path, cwd)] = self.files.script(path, cwd)
        return found

    def run_deferred(self) -> None:
        """The deferred scripts, read from the directories the walk settled on; a directory
        still unknown makes them unknown code."""
        for _ in range(MAX_DEFERRALS):
            if not self.deferred:
                return
            self.settle_cwds()
            if self.cwd_unknown:
                break
            pending, self.deferred = self.deferred, {}
            for read in pending.values():
                read()
        first = next(iter(self.deferred), ("", "a script"))
        self.fail(f"{first[1]} is run from a directory only known at run time")

    def settle_produced(self) -> None:
        """`t=$(mktemp -d)`, `d=$(pwd)`: a name bound to a substitution whose output is known
        by its form (producers.py) holds those paths. Known once the whole command is
        walked: TMPDIR may be bound after, in a loop."""
        for values in self.variables.bound.values():
            settled: list[Word] = []
            for value in values:
                made = produced_directories(value.text, self.cwds, self._variable,
                                            files=True) if value.dynamic else None
                settled += [Word(resolve(p, self.cwd or "/")) for p in made] if made else [value]
            values[:] = settled

    def option_free(self, commands: Sequence[SimpleCommand]) -> list[SimpleCommand]:
        """`rm -f "$f"` with f=$(mktemp): a word each of whose values is known once the walk
        ends, none beginning with '-', is no option (a rule naming options is not uncertain)."""
        cwds = None if self.cwd_unknown else dict.fromkeys(self.cwds)
        out: list[SimpleCommand] = []
        for command in commands:
            words = list(command.words)
            for i, word in enumerate(words[1:], start=1):
                if not word.lead_dynamic or word.globby or word.pattern:
                    continue
                values = self.variables.alternatives(word, self.files.environment, cwds)
                if values and all(not v.dynamic and not v.globby and v.text[:1] not in "-"
                                  for v in values):
                    words[i] = replace(word, lead_dynamic=False)
            out.append(command if words == list(command.words)
                       else replace_command(command, option_words=tuple(words)))
        return out

    def settle_cwds(self) -> None:
        """`cd "$HOME"`, `cd "$d"`: directories known once the whole command is walked, by
        every value the variables may hold (a later binding may run first, in a loop), or
        from the environment the command inherits; `cd "$(mktemp -d)"` and the like by what
        they print (producers.py). Any other stays unknown."""
        if self.too_many_cwds:
            return
        if self.cwd_unknown:
            reached: list[str] = []
            for target, walked in self.cds_by_value:
                if self._nothing_runs_after(walked):
                    continue  # `cd src && make; cd -`: no path is relative to where it goes
                found = self._cd_values(target, [*self.cwds, *reached])
                if found is None:
                    return
                reached += found
            self.cwds.extend(reached)
            self.cwd_unknown = False
        self.settle_repeated_cds()

    def _nothing_runs_after(self, walked: int) -> bool:
        """The `cd` reached when `walked` commands were walked is the command's last: no
        command comes after it, none repeats it, no trap runs later."""
        return (walked == self.trailing_cd_at == len(self.commands)
                and not any(c.name == "trap" for c in self.commands))

    def settle_repeated_cds(self) -> None:
        """A `cd` in a loop or a function may run after any other, again and again
        (`for d in ~ .ssh; do cd $d; done`): its relative targets are followed from every
        directory reached until no new one appears; past MAX_DIRECTORIES, unknown."""
        steps: list[str] = []
        for target in self.repeated_cds:
            values = ([target] if not target.dynamic else self.variables.alternatives(
                target, self.files.environment, dict.fromkeys(self.cwds)))
            for value in values:
                if value.dynamic or value.globby:
                    self.cwd_unknown = True
                    return
                if not value.text.startswith(("/", "~")):
                    steps.append(value.text)
        reached = dict.fromkeys(self.cwds)
        fresh = list(reached)
        while steps and fresh:
            fresh = [d for d in dict.fromkeys(resolve(s, c) for c in fresh for s in steps)
                     if d not in reached]
            reached.update(dict.fromkeys(fresh))
            if len(reached) > MAX_DIRECTORIES:
                self.cwd_unknown = True
                return
        self.cwds[:] = list(reached)

    def _variable(self, name: str) -> list[str] | None:
        """What `$name` may hold when the command runs: its bindings in the command and the
        environment ([] unset, None unknown)."""
        bound = self.variables.bound.get(name, [])
        if any(v.dynamic or v.globby for v in bound):
            return None
        found = [v.text for v in bound]
        if name in self.variables.inherited or not bound:
            inherited = self.files.environment(name)
            found += [inherited] if inherited is not None else []
        return found

    def _cd_values(self, target: Word, cwds: list[str]) -> list[str] | None:
        environment = self.files.environment
        produced = produced_directories(target.text, self.cwds, self._variable)
        if produced is not None:
            return [resolve(d, self.cwd or "/") for d in produced]  # TMPDIR=~/x, relative
        named = _REFERENCE.fullmatch(target.text)
        name = named.group(1) if named is not None else ""
        if name in self.variables.bound and name not in self.variables.inherited:
            # tmp=$(mktemp -d); cd "$tmp": each value the name is given
            out: list[str] = []
            for value in self.variables.bound[name]:
                produced = (produced_directories(value.text, self.cwds, self._variable)
                            if value.dynamic else None)
                found = ([resolve(d, self.cwd or "/") for d in produced] if produced is not None
                         else None if value.dynamic
                         else [resolve(value.text, c) for c in self.cwds])
                if found is None or value.globby:
                    return None
                out += found
            return out
        values = self.variables.alternatives(target, environment, dict.fromkeys(cwds))
        if target.globby or any(v.dynamic or v.globby for v in values):
            return None
        return [resolve(v.text, cwd) for v in values for cwd in self.cwds]

    def patched(self, run: PatchRun, feed: Feed, text: str) -> None:
        """The files a patch writes: those its headers name under its directory; a patch
        that cannot be read here (its input unknown, a file the command writes first) may
        write anything under it (patches.py)."""
        own = len(self.commands) - 1
        if run.source is not None:
            self.access("read", run.source, text)
        if not run.writes:
            return
        for target in run.targets:
            self.access("write", target, text, own=own)
        body = self._patch_text(run.source, feed)
        if body is None:
            self.access("write", tree(run.base), text, own=own)
            return
        base = run.base
        for name in patched_names(body, run.strip):
            self.access("write", Word(f"{base.text.rstrip('/')}/{name}", dynamic=base.dynamic,
                                      lead_dynamic=base.lead_dynamic), text, own=own)

    def _patch_text(self, source: Word | None, feed: Feed) -> str | None:
        if source is None and feed.pipe is not None:
            feed = self.produced(*feed.pipe)
        if source is None and feed.text is not None:
            return feed.text
        source = source or feed.path  # patch -p1 < x.patch
        if source is None or self.cwd_unknown or len(set(self.cwds)) > 1:
            return None  # after a cd: which file the name is, is known only when it runs
        written = any(a.mode == "write" and a.path.text == source.text
                      for a in self.accesses)  # made by the command before it runs
        if source.dynamic or source.globby or written:
            return None
        return self.files.script(source.text, self.cwd or "/").text

    def extracted(self, name: str, words: Sequence[Word], text: str) -> None:
        """The members an extraction writes under its destination (archives.py)."""
        from gateway.policy.shell.archives import extraction

        found = extraction(name, list(words))
        if found is None:
            return
        archive, destination = found.archive, found.destination
        moved = self.cwd_unknown or len(set(self.cwds)) > 1  # after a cd: which archive?
        names = (None if archive is None or archive.dynamic or archive.globby or moved
                 else self.files.archive_members(archive.text, self.cwd or "/"))
        own = len(self.commands) - 1
        if names is None:
            self.access("write", tree(destination), text, own=own)
            return
        for member in names:
            if member.endswith("/") and not member.endswith("/**/"):
                continue  # a directory entry: the directory, no file in it
            whole = member.endswith("/**")
            if found.strip:
                parts = member.lstrip("/").split("/")
                if len(parts) <= found.strip:
                    if not whole:
                        continue  # tar skips a member with no name left
                    member = "**"
                else:
                    member = "/".join(parts[found.strip:])
            name_in = member.lstrip("/").removesuffix("/**")
            base = "" if found.absolute and member.startswith("/") else destination.text
            path = Word(f"{base.rstrip('/')}/{name_in}",
                        dynamic=destination.dynamic and not found.absolute,
                        lead_dynamic=destination.lead_dynamic and not found.absolute)
            self.access("write", tree(path) if whole else path, text, own=own)

    def settle(self, word: Word) -> Word:
        """A glob that expands, in every directory the command has reached so far, to no
        word beginning with '-' is no option (checked again once the whole command is
        known: a later step may create such a name, or `cd` elsewhere, first)."""
        if not word.globby or word.dynamic or word.plain_names or self.cwd_unknown:
            return word
        cwds = dict.fromkeys(self.cwds or [self.cwd or "/"])
        for cwd in cwds:
            found = self.glob(word.text, cwd)
            if found is None or any(special_name(n) and n != word.text for n in found):
                return word
        self.settled = True
        return replace_word(word, plain_names=True)

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

    def output_words(self, start: int, end: int) -> list[Word] | None:
        """What commands[start:end] print, split into words; None when not known."""
        produced = self.produced(start, end) if end > start else Feed(unknown="nothing")
        if produced.text is not None:
            return [Word(t, verbatim=True) for t in produced.text.split()]
        found = [self.outputs.get(k) for k in range(start, end)]
        if not found or any(f is None for f in found):
            return None
        return [w for f in found if f is not None for w in f]


def special_name(name: str) -> bool:
    """A file name a program may read as more than a name: an option, a perl open mode."""
    return name[:1] in ("-", "|", "<", ">", "+", " ", "\t") or name.endswith("|")


def special_name_possible(path: Word) -> bool:
    """Whether a file written at `path` may have a name a program reads as more than a
    name (see `special_name`)."""
    name = path.text.rstrip("/").rsplit("/", 1)[-1]
    return special_name(name) or (path.dynamic and (
        bool(path.pattern) or any(c in name for c in "$`"))) or (
        is_glob(path) and name[:1] in ("*", "?", "[", "{"))


def brace_expanded(words: Sequence[Word]) -> Sequence[Word]:
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
        out.extend(replace_word(word, text=alt, globby=is_pattern(alt), plain_names=False)
                   for alt in found)
    return out
