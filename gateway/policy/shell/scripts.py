"""Code a command hands over, read and walked in turn: shell strings (sh -c, eval, options and
variables holding a command), script files a shell or `source` runs (read from disk,
bounded; a missing one decided once the whole command is known), code on stdin when it is a
known literal, and code in other languages (awk, sed, python -c, node -e, ...) through their
readers, which load on first use."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gateway.policy.shell import programs
from gateway.policy.shell.bashsyntax import heredoc_texts, parse_bash, tabless
from gateway.policy.shell.interp.programs import OPAQUE_LANGUAGES
from gateway.policy.shell.lexer import lex
from gateway.policy.shell.scanned import INHERITED, Feed, replace_command
from gateway.policy.shell.walkstate import WalkState
from gateway.policy.shell.words import Word

if TYPE_CHECKING:
    from gateway.policy.shell.interp.effects import CodeEffects

MAX_DEPTH = 8
"""Shell strings inside shell strings (sh -c "sh -c '...'") followed this deep."""


class ScriptReading(WalkState):
    def script(self, source: str, via: tuple[str, ...], depth: int, feed: Feed) -> None:
        if depth > MAX_DEPTH:
            self.fail("shell strings nested too deeply")
            return
        joined, bodies = lex(source)
        root = parse_bash(joined)
        if depth == 0 and self.top < 0:
            self.top = root.id
        if root.has_error:
            self.fail("the command does not parse as Bash")
        elif bodies and heredoc_texts(root) != [tabless(b) for b in bodies]:
            # tree-sitter misreads some here-documents (a body line starting with a
            # backslash): never analyse a text other than the one bash runs.
            self.fail("a here-document does not parse as bash reads it")
        self.visit(root, via, depth, feed)

    def script_file(self, path: Word, via: tuple[str, ...], depth: int, what: str) -> None:
        self.access("read", path, f"{what} {path.text}")
        if path.dynamic or path.globby:
            self.fail(f"{what} runs a script named at run time")
            return
        places = self.scripts_at(path.text)
        if places is None:
            self.deferred.setdefault(("script", f"{what} {path.text}", *via), lambda: (
                self.script_file(path, via, depth, what)))
            return
        for target, found in places:
            if found.text is None and found.missing and self.speculating:
                continue  # a guess at what an unknown program runs: no code of its own
            if found.text is None and found.missing:
                # Decided when the whole command is known (`finish`): whether any step of
                # it could put the script there, whatever order they run in.
                self.missing_scripts.append((len(self.commands) - 1, target,
                                             f"{what} runs {path.text}, which cannot be "
                                             f"analysed: {found.why}"))
            elif found.text is None:
                self.fail(f"{what} runs {path.text}, which cannot be analysed: {found.why}")
                return
            else:
                self.script(found.text, (*via, what), depth + 1, INHERITED)

    def missing_program_problem(self) -> str:
        """A program run by a path that is not on disk, which a step of the command writes
        (in any order) with content of its making: unknown code. A compiler's output is a
        binary; a mode change or an empty file is no code."""
        for path in self.missing_programs:
            name = os.path.basename(path)
            for access in self.accesses:
                writer = access.command.split(" ", 1)[0].rsplit("/", 1)[-1]
                if (access.mode == "write" and not access.possible and writer not in
                        programs.BUILDS_BINARIES | programs.WRITE_NO_CODE
                        and os.path.basename(access.path.text) == name):
                    return (f"{path} runs a file the command writes first: its code cannot "
                            "be analysed")
        return ""

    def project_code_problem(self) -> str:
        """A runner in the command whose project files (programs.PROJECT_CODE) a step of the
        same command writes: `echo '{"scripts":{"preinstall":...}}' > package.json; npm i`
        runs code the command made, which no rule sees."""
        runners = {c.name for c in self.commands} & programs.PROJECT_CODE.keys()
        for name in sorted(runners):
            files = programs.PROJECT_CODE[name]
            for access in self.accesses:
                path = access.path.text
                named = path in files or path.endswith(tuple(f"/{f}" for f in files))
                if (access.mode == "write" and named and not access.possible
                        and not access.path.dynamic):  # not an unknown program's operand
                    return (f"{name} runs the code of {path}, which the command writes first: "
                            "it cannot be analysed")
        return ""

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
            own = self.commands[runner].text[:200] if 0 <= runner < len(self.commands) else ""
            if writers or any(a.command != own and ((a.mode == "write" and not a.possible)
                                                    or (a.possible and a.command not in creators))
                              for a in self.accesses):
                return why
        return ""

    def code(self, text: Word, via: tuple[str, ...], depth: int, what: str,
             feed: Feed = INHERITED) -> None:
        """A shell string found in an option, a variable or an alias; `feed`: the stdin of
        the program that runs it, which the string's commands inherit (`| sh -c sh`)."""
        if text.dynamic:
            self.fail(f"{what} runs text computed at run time")
        elif text.text.strip():
            self.script(text.text, (*via, what), depth + 1, feed)

    def stdin_code(self, language: str, feed: Feed, via: tuple[str, ...], depth: int,
                   what: str) -> None:
        """A program that reads its code from stdin: only a known literal is analysed."""
        if feed.pipe is not None:
            feed = self.produced(*feed.pipe)
        if feed.text is not None:
            if language == "bash":  # bash drops the NUL bytes of its input
                self.script(feed.text.replace("\0", ""), (*via, what), depth + 1, INHERITED)
            else:
                self.foreign_code(language, feed.text, via, depth, what)
            return
        elif feed.path is not None:
            if language == "bash":
                self.script_file(feed.path, via, depth, what)
                return
            self.access("read", feed.path, what)
            places = self.scripts_at(feed.path.text) if not (
                feed.path.dynamic or feed.path.globby) else None
            if places is None and not (feed.path.dynamic or feed.path.globby):
                self.deferred.setdefault(
                    ("stdin", f"{what} < {feed.path.text}", language, *via),
                    lambda: self.stdin_code(language, feed, via, depth, what))
                return
            for target, found in places or []:
                if found.text is not None:
                    self.foreign_code(language, found.text, via, depth, what)
                elif found.missing:  # unknown if the command writes it
                    self.missing_scripts.append((len(self.commands) - 1, target,
                                                 f"{what} reads {language} code from "
                                                 f"{feed.path.text}: {found.why}"))
                else:
                    places = None
            if places is None:
                self.fail(f"{what} reads {language} code from a file that cannot be read here")
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
        elif language == "ed":
            from gateway.policy.shell.edscript import analyse_ed

            effects = analyse_ed(text)
        elif language == "sed":
            effects = analyse_sed(text)
        elif language == "sql":
            from gateway.policy.shell.special import sql_problem

            self.fail(sql_problem(text))
            return
        elif language in OPAQUE_LANGUAGES or language in ("make", "vim"):
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
                            code=code_words(words, inline.source if inline else None))
        if inline is None:
            return  # runs no program of its own (--version, -m pip, a package script)
        self.fail(inline.unparseable)
        for path in inline.reads:
            self.access("read", path, name)
        for path in inline.writes:
            self.access("write", path, name, own=index)
        if inline.script_path is not None:
            self.access("read", inline.script_path, self.commands[index].text)
        for load in inline.loads:  # a file it runs first (ruby -r./x, php auto_prepend_file)
            if language == "php" or "/" in load.text or load.text.startswith("."):
                self.access("read", load, self.commands[index].text)
        if inline.source is not None or inline.from_stdin or inline.loads:
            self.commands[index] = replace_command(self.commands[index], carries_code=(
                f"{name} runs code given in its arguments or input"))
        if inline.dynamic:
            self.fail(f"{name} runs code computed at run time")
        elif inline.source is not None:
            from gateway.policy.shell.interp import analyse_code

            self.effects(analyse_code(inline.language, inline.source), name, via, depth, feed)
        if inline.from_stdin:
            self.stdin_code(inline.language, feed, via, depth, name)


_DIGIT = re.compile(r"\d")
def code_words(words: Sequence[Word], source: str | None) -> frozenset[int]:
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
