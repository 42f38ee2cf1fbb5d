"""The walk over Bash's syntax tree: any node may hold commands. Lists, pipelines and process
substitutions make data flows; redirections, here-documents and here-strings become file
accesses and what a command reads on stdin; declarations, assignments and loops bind
variables (and NAME=value that makes programs run code is followed); a simple command's
parts become its argv, handed to `emit`."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from tree_sitter import Node

from gateway.policy.shell import programs
from gateway.policy.shell.bashsyntax import LEAF_WORDS, folded, node_text, substituted_text
from gateway.policy.shell.scanned import Feed, Redirect, replace_command
from gateway.policy.shell.scripts import ScriptReading
from gateway.policy.shell.walkstate import OverBudget
from gateway.policy.shell.words import Word, word_value

MAX_NESTING = 200
"""Syntax nesting (subshells, substitutions) followed this deep; deeper is unparseable."""
_ASSIGNING = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?=")
_REPEATING = frozenset({"for_statement", "c_style_for_statement", "while_statement",
                        "function_definition"})
"""Bodies that may run more than once, each time after the others (walkstate.repeated_cds)."""


class SyntaxWalk(ScriptReading):
    def visit(self, node: Node, via: tuple[str, ...], depth: int, feed: Feed) -> None:
        self.ticks += 1
        if self.ticks & 127 == 0 and time.monotonic() > self.deadline:
            raise OverBudget
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            self.fail("the command is nested too deeply to analyse")
        elif node.type in _REPEATING:
            self.repeating += 1
            self.dispatch(node, via, depth, feed)
            self.repeating -= 1
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
        elif kind == "function_definition":
            name_node = node.child_by_field_name("name")
            if name_node is not None:
                self.functions.add(node_text(name_node))
            self.children(node, via, depth, feed)
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
                assigned = _ASSIGNING.match(node_text(node))
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
            self.commands[start] = replace_command(first, redirects=(*first.redirects, *redirects))

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
                quoted = any(c in node_text(part) for c in "'\"\\")
            elif part.type == "heredoc_body":
                text = node_text(part)
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
        op = next((node_text(c) for c in node.children if not c.is_named), "")
        fd = next((node_text(c) for c in node.named_children if c.type == "file_descriptor"), "")
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
        keyword = node_text(node.children[0]) if node.children else "declare"
        args: list[tuple[str, bool]] = []
        for child in node.named_children:
            if child.type == "variable_assignment":
                name_node = child.child_by_field_name("name")
                args.append((node_text(name_node) if name_node is not None else "", False))
                self.assignment(child, via, depth)
            else:
                value = word_value(child)
                args.append((value.text, value.dynamic))
        self.hazards.name_arguments(keyword, args)
        references = nameref([t for t, _ in args])
        for child in node.named_children:
            if child.type != "variable_assignment":
                value = word_value(child)
                if not value.text.startswith("-"):  # `local f`: a new, empty variable
                    self.bind(value.text, Word(""))
            elif references:  # declare -n f=g: $f is g's value
                name_node = child.child_by_field_name("name")
                self.variables.unknown(node_text(name_node) if name_node is not None else "")
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
        name = node_text(name_node) if name_node is not None else ""
        value = word_value(value_node) if value_node is not None else Word("")
        if value_node is not None and value_node.type == "array":
            value = Word(node_text(value_node), dynamic=any(
                word_value(c).dynamic for c in value_node.named_children))
        if name_node is not None and name_node.type == "subscript":
            self.hazards.subscript(node_text(name_node))
            name = node_text(name_node).split("[", 1)[0]
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

    def for_loop(self, node: Node, substituted: dict[int, list[Word]]) -> str:
        """Binds the loop variable to each value; returns its name when the body's uses see
        only those values (and it was not bound unconditionally before)."""
        variable = node.child_by_field_name("variable")
        if variable is None:
            return ""
        values = [v for c in node.children_by_field_name("value")
                  for v in substituted.get(c.id, [word_value(c)])]
        dynamic = any(v.dynamic or v.globby for v in values)
        self.hazards.assign(node_text(variable), " ".join(v.text for v in values), dynamic)
        if not values:
            self.variables.unknown(node_text(variable))  # `for f; do`: the positional parameters
        name = node_text(variable)
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
        kind = programs.env_kind(name)
        if name == "PATH":  # relative entries are found from where PATH is set
            self.path_values.append((value, None if self.cwd_unknown else (
                tuple(self.cwds) or (self.cwd or "/",))))
        if kind == "shell":
            self.code(value, via, depth, f"{name}=")
        elif kind == "file":
            self.script_file(value, via, depth, f"{name}=")
        elif kind == "opaque":
            self.fail(f"{name}= makes programs run code that is not analysed")
        if kind is not None or name == "PATH" or name.startswith("GIT_"):
            return f"{name}= makes programs run or load code it names"
        return ""
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
                    if inner[0].type not in LEAF_WORDS:
                        others.append(child)
            elif kind == "variable_assignment":
                name_node = child.child_by_field_name("name")
                value_node = child.child_by_field_name("value")
                name = node_text(name_node) if name_node is not None else ""
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
                substituted = folded(child) if kind == "command_substitution" else None
                quoted = _quoted_substitution(child) if kind == "string" else None
                if substituted is not None:
                    words.extend(substituted)
                elif quoted is not None:  # "$(cat <<'EOF' ...)": one word, its output
                    words.append(Word(quoted.rstrip("\n"), verbatim=True))
                else:
                    words.append(word_value(child))
                if kind not in LEAF_WORDS:
                    others.append(child)
        start = len(self.commands)
        self.emit(words, via, depth, own_feed)
        end = len(self.commands)
        if own_redirects:
            self.attach_redirects(start, own_redirects)
        if start < end and (assignments or loads):
            first = self.commands[start]
            self.commands[start] = replace_command(first, assignments=tuple(assignments),
                                                   carries_code=loads or first.carries_code)
        for child in others:
            if child.type == "process_substitution":
                produced = self.span(child, via, depth, feed)
                if node_text(child).startswith("<("):
                    self.flows.append((produced, (start, end)))
                else:
                    self.flows.append(((start, end), produced))
            elif child.named_children:
                self.visit(child, via, depth, feed)


def nameref(texts: Sequence[str]) -> bool:
    """declare -n / local -n: the names refer to other variables."""
    return any(t.startswith("-") and not t.startswith("--") and "n" in t[1:] for t in texts)


def _quoted_substitution(string: Node) -> str | None:
    """The text of `"$(...)"` when the substitution is the whole string and its output is
    known (bashsyntax.substituted_text)."""
    inner = string.named_children
    if len(inner) != 1 or inner[0].type != "command_substitution":
        return None
    return substituted_text(inner[0])
