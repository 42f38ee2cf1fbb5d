"""Every simple command a Bash string would run, found with tree-sitter-bash.

The walk visits lists, pipelines, subshells, groups, compound statements, substitutions and
function bodies generically (any node may hold commands); it recurses into shell strings
(sh -c, eval, trap, su -c, watch, here-docs and here-strings fed to a shell, echo piped to a
shell) and sees through wrappers. A name computed at run time or a parse error makes the scan
`unparseable`, which policies treat as deny (or ask) while a Bash deny rule exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from gateway.policy.shell.argv import Invocation, analyze, normalize_name
from gateway.policy.shell.words import Word, word_value
from gateway.policy.shell.wrappers import (
    EVALS,
    FIND_EXEC,
    FINDS,
    SHELL_VALUE_OPTS,
    SHELLS,
    TRAPS,
    WRAPPERS,
    Wrapper,
)

MAX_DEPTH = 8


@dataclass(frozen=True)
class SimpleCommand:
    name: str
    invocation: Invocation
    text: str
    via: tuple[str, ...] = ()
    """Wrappers and shells this command was found inside, outermost first."""
    runs_other: bool = False
    """A wrapper or shell whose real work is another simple command in the scan."""


@dataclass(frozen=True)
class Scan:
    commands: tuple[SimpleCommand, ...]
    unparseable: str = ""
    """Why the command cannot be fully known ('' when it can)."""
    edges: frozenset[tuple[int, int]] = frozenset()
    """(producer, consumer) command indexes: output of one flows into the other."""

    def feeds(self, producer: int, consumer: int) -> bool:
        return (producer, consumer) in self.edges


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


def scan(command: str) -> Scan:
    walker = _Walker()
    walker.script(command, (), 0)
    return Scan(tuple(walker.commands), walker.problem, frozenset(walker.edges))


@dataclass
class _Walker:
    commands: list[SimpleCommand] = field(default_factory=list)
    edges: set[tuple[int, int]] = field(default_factory=set)
    problem: str = ""
    stdin_shells: set[int] = field(default_factory=set)

    def fail(self, why: str) -> None:
        if not self.problem:
            self.problem = why

    def script(self, source: str, via: tuple[str, ...], depth: int) -> None:
        if depth > MAX_DEPTH:
            self.fail("shell strings nested too deeply")
            return
        # bash drops backslash-newline before splitting words (r\<newline>m is rm);
        # tree-sitter treats it as a separator, so join the lines first.
        source = source.replace("\\\n", "")
        tree = _parser().parse(source.encode("utf-8", "surrogateescape"))
        if tree.root_node.has_error:
            self.fail("the command does not parse as Bash")
        self.visit(tree.root_node, via, depth)

    # -- tree walk ---------------------------------------------------------------------
    def visit(self, node: Node, via: tuple[str, ...], depth: int) -> None:
        kind = node.type
        if kind == "command":
            self.command(node, via, depth)
        elif kind == "pipeline":
            self.pipeline(node, via, depth)
        elif kind == "redirected_statement":
            self.redirected(node, via, depth)
        else:
            for child in node.named_children:
                self.visit(child, via, depth)

    def span(self, node: Node, via: tuple[str, ...], depth: int) -> range:
        start = len(self.commands)
        self.visit(node, via, depth)
        return range(start, len(self.commands))

    def link(self, producers: range, consumers: range) -> None:
        self.edges.update((p, c) for p in producers for c in consumers)

    def pipeline(self, node: Node, via: tuple[str, ...], depth: int) -> None:
        stages = [self.span(child, via, depth) for child in node.named_children]
        for i, producer in enumerate(stages):
            for consumer in stages[i + 1 :]:
                self.link(producer, consumer)
        for left, right in pairwise(stages):
            self.piped_text(left, right, via, depth)

    def redirected(self, node: Node, via: tuple[str, ...], depth: int) -> None:
        body = node.child_by_field_name("body")
        fed = self.span(body, via, depth) if body is not None else range(0)
        for child in node.children:
            if body is not None and child.start_byte == body.start_byte and child.type == body.type:
                continue
            if child.type != "heredoc_redirect":
                self.visit(child, via, depth)
                continue
            later = range(len(self.commands), len(self.commands))
            text = ""
            for part in child.named_children:
                if part.type == "heredoc_body":
                    self.visit(part, via, depth)
                    text = part.text.decode("utf-8", "replace") if part.text else ""
                elif part.type not in ("heredoc_start", "heredoc_end"):
                    later = self.span(part, via, depth)
            self.link(fed, later)
            if any(i in self.stdin_shells for i in (*fed, *later)):
                self.script(text, (*via, "here-doc"), depth + 1)

    def piped_text(self, left: range, right: range, via: tuple[str, ...], depth: int) -> None:
        """`echo 'rm -rf /' | sh`: the shell runs what echo or printf print."""
        if not any(i in self.stdin_shells for i in right):
            return
        for i in left:
            inv = self.commands[i].invocation
            if inv.name not in ("echo", "printf") or self.commands[i].runs_other:
                continue
            if inv.flaggy_dynamic or any(w.dynamic for w in inv.operands):
                self.fail(f"{inv.name} pipes run-time text into a shell")
                continue
            texts = [w.text for w in inv.operands]
            source = (texts[0] if inv.name == "printf" and texts else " ".join(texts))
            self.script(source.replace("\\n", "\n"), (*via, "pipe"), depth + 1)

    # -- simple commands ---------------------------------------------------------------
    def command(self, node: Node, via: tuple[str, ...], depth: int) -> None:
        words: list[Word] = []
        name_node = node.child_by_field_name("name")
        if name_node is not None and name_node.named_children:
            words.append(word_value(name_node.named_children[0]))
        words.extend(word_value(arg) for arg in node.children_by_field_name("argument"))
        index = len(self.commands)
        self.emit(words, via, depth)
        for child in node.named_children:
            start = len(self.commands)
            self.visit(child, via, depth)
            inner = range(start, len(self.commands))
            text = child.text.decode("utf-8", "replace") if child.text else ""
            if child.type == "herestring_redirect" and index in self.stdin_shells:
                self.string_script(child, via, depth)
            elif "<(" in text[:3] or text.startswith("< <("):
                self.link(inner, range(index, index + 1))
            elif ">(" in text[:3]:
                self.link(range(index, index + 1), inner)

    def string_script(self, redirect: Node, via: tuple[str, ...], depth: int) -> None:
        for part in redirect.named_children:
            value = word_value(part)
            if value.dynamic:
                self.fail("a here-string with run-time text is fed to a shell")
            else:
                self.script(value.text, (*via, "here-string"), depth + 1)

    def record(self, words: Sequence[Word], via: tuple[str, ...], runs_other: bool) -> int:
        name = normalize_name(words[0].text)
        invocation = analyze(name, words[1:])
        text = " ".join(w.text for w in words)
        self.commands.append(SimpleCommand(name, invocation, text, via, runs_other))
        return len(self.commands) - 1

    def emit(self, words: Sequence[Word], via: tuple[str, ...], depth: int) -> None:
        if not words:
            return
        head = words[0]
        if head.dynamic or head.globby or not head.text:
            self.fail(f"command name computed at run time: {head.text}")
            return
        name = normalize_name(head.text)
        if name in WRAPPERS:
            self.wrapper(WRAPPERS[name], words, via, depth)
        elif name in SHELLS:
            self.shell(words, via, depth)
        elif name in EVALS or name in TRAPS:
            self.record(words, via, True)
            parts = words[1:] if name in EVALS else words[1:2]
            if any(w.dynamic for w in parts):
                self.fail(f"{name} runs text computed at run time")
            elif parts:
                self.script(" ".join(w.text for w in parts), (*via, name), depth + 1)
        elif name in FINDS:
            self.record(words, via, False)
            self.find_exec(words, (*via, name), depth)
        else:
            self.record(words, via, False)

    def find_exec(self, words: Sequence[Word], via: tuple[str, ...], depth: int) -> None:
        i = 1
        while i < len(words):
            if words[i].text in FIND_EXEC:
                end = i + 1
                while end < len(words) and words[end].text not in (";", "+"):
                    end += 1
                self.emit(words[i + 1 : end], via, depth)
                i = end
            i += 1

    def shell(self, words: Sequence[Word], via: tuple[str, ...], depth: int) -> None:
        has_c = False
        i = 1
        while i < len(words):
            text = words[i].text
            if words[i].lead_dynamic:
                self.fail("shell options computed at run time")
                break
            if text == "--" or text == "-":
                i += 1
                break
            if text in SHELL_VALUE_OPTS:
                i += 2
                continue
            if text[:1] in ("-", "+") and len(text) > 1:
                has_c = has_c or (not text.startswith("--") and "c" in text[1:])
                i += 1
                continue
            break
        operand = words[i] if i < len(words) else None
        index = self.record(words, via, has_c or operand is None)
        name = self.commands[index].name
        if has_c:
            if operand is None:
                return
            if operand.dynamic:
                self.fail(f"{name} -c runs text computed at run time")
            else:
                self.script(operand.text, (*via, name), depth + 1)
        elif operand is None:
            self.stdin_shells.add(index)

    def wrapper(self, spec: Wrapper, words: Sequence[Word], via: tuple[str, ...],
                depth: int) -> None:
        index = self.record(words, via, True)
        name = self.commands[index].name
        inner_via = (*via, name)
        if spec.shell_opts and self.shell_option(spec, words, inner_via, depth):
            return
        i = 1
        while i < len(words):
            word = words[i]
            text = word.text
            if word.lead_dynamic:
                self.fail(f"{name} runs a command computed at run time")
                return
            if spec.assignments and "=" in text and not text.startswith("-"):
                i += 1
                continue
            if text == "--":
                i += 1
                break
            if not text.startswith("-") or text == "-":
                break
            if text.startswith("--"):
                opt, eq, _ = text.partition("=")
                if opt in spec.query_opts:
                    self.commands[index] = _plain(self.commands[index])
                    return
                i += 2 if (opt in spec.value_opts and not eq) else 1
                continue
            i += 1
            for j, char in enumerate(text[1:]):
                opt = "-" + char
                if opt in spec.query_opts:
                    self.commands[index] = _plain(self.commands[index])
                    return
                if opt in spec.value_opts:
                    if j == len(text) - 2:
                        i += 1
                    break
        i += spec.operands
        rest = list(words[i:])
        if not rest:
            self.commands[index] = _plain(self.commands[index])
            return
        if spec.joins_args:
            if any(w.dynamic for w in rest):
                self.fail(f"{name} runs text computed at run time")
            else:
                self.script(" ".join(w.text for w in rest), inner_via, depth + 1)
            return
        self.emit(rest, inner_via, depth)

    def shell_option(self, spec: Wrapper, words: Sequence[Word], via: tuple[str, ...],
                     depth: int) -> bool:
        """su -c, script -c, flock -c, env -S: the option value is a shell string."""
        for i, word in enumerate(words[1:], start=1):
            text = word.text
            if text == "--":
                break
            value = _option_value(spec.shell_opts, words, i)
            if value is _ABSENT:
                continue
            if value is None:
                return False
            if value.dynamic:
                self.fail(f"{normalize_name(words[0].text)} runs text computed at run time")
            else:
                self.script(value.text, via, depth + 1)
            return True
        return False


_ABSENT = Word("\0absent")


def _option_value(options: frozenset[str], words: Sequence[Word], i: int) -> Word | None:
    """The value of option `words[i]` if it is one of `options` (also bundled: -qc CMD)."""
    text = words[i].text
    following = words[i + 1] if i + 1 < len(words) else None
    if text.startswith("--"):
        opt, eq, attached = text.partition("=")
        if opt not in options:
            return _ABSENT
        return Word(attached) if eq else following
    if not text.startswith("-") or len(text) < 2:
        return _ABSENT
    for j, char in enumerate(text[1:], start=2):
        if "-" + char in options:
            return Word(text[j:]) if text[j:] else following
    return _ABSENT


def _plain(command: SimpleCommand) -> SimpleCommand:
    return SimpleCommand(command.name, command.invocation, command.text, command.via, False)
