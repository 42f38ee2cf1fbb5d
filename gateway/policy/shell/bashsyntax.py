"""Bash's syntax tree as tree-sitter-bash gives it: the parse (inside a subshell, which keeps
long pipelines linear; words it splits where bash does not, parsed again: misparse.py), a
node's text, here-document bodies as bash reads them, and the words
a literal `$(echo ...)` folds into."""

from __future__ import annotations

from functools import lru_cache

from tree_sitter import Language, Node, Parser

from gateway.policy.shell.argv import normalize_name
from gateway.policy.shell.misparse import (
    braced,
    herestrings_first,
    misplaced_herestrings,
    misread_names,
)
from gateway.policy.shell.producers import literal_output
from gateway.policy.shell.words import Word, word_value

LEAF_WORDS = frozenset({"word", "raw_string", "ansi_c_string", "number"})
"""Argument node types that cannot hold a command (no substitution inside)."""


@lru_cache(maxsize=1)
def _language() -> Language:
    from gateway.policy.shell.grammar import bash_language  # loaded when Bash is scanned

    return Language(bash_language())


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(_language())


def parse_bash(source: str) -> Node:
    """The syntax tree of `source`, parsed inside a subshell.

    tree-sitter-bash takes quadratic time on a long pipeline at the top level of a program
    (a 3,000-stage pipeline: 300 ms) but linear time inside `( ... )` (40 ms). The wrapped
    parse is used when it is exactly one subshell holding the text; otherwise (an unbalanced
    `)` in the text) the text is parsed as it is.
    """
    data = source.encode("utf-8", "surrogateescape")
    for _ in range(_MAX_REPAIRS):
        root, parsed, shift = _parse_bytes(data)
        misread = misread_names(root, parsed, _language())  # see misparse.py
        moves = misplaced_herestrings(root)
        if misread:
            data = braced(data, [offset - shift for offset in misread])
        elif moves:
            data = herestrings_first(data, [(a - shift, b - shift, c - shift)
                                            for a, b, c in moves])
        else:
            break
    return root


_MAX_REPAIRS = 8


def _parse_bytes(data: bytes) -> tuple[Node, bytes, int]:
    """The tree, the bytes it was parsed from and where `data` starts in them."""
    wrapped_data = b"(" + data + b"\n)"
    wrapped = _parser().parse(wrapped_data).root_node
    children = wrapped.named_children
    if (len(children) == 1 and children[0].type == "subshell" and not wrapped.has_error
            and children[0].end_byte == len(data) + 3):
        return children[0], wrapped_data, 1
    return _parser().parse(data).root_node, data, 0


def node_text(node: Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def heredoc_texts(root: Node) -> list[str]:
    """Here-document bodies in source order, as tree-sitter read them."""
    found: list[tuple[int, str]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "heredoc_body":
            found.append((node.start_byte, tabless(node_text(node))))
            continue
        stack.extend(node.named_children)
    return [text for _, text in sorted(found)]


def tabless(body: str) -> str:
    """A body compared without leading tabs (`<<-` strips them; tree-sitter's node for
    such a body starts after the first line's tabs)."""
    return "\n".join(line.lstrip("\t") for line in body.split("\n")).rstrip("\n")


def folded(substitution: Node) -> list[Word] | None:
    """`$(echo a b)` with literal arguments: the words bash splits its output into."""
    output = substituted_text(substitution)
    if output is None:
        return None
    return [Word(piece, globby=any(c in piece for c in "*?[")) for piece in output.split()]


def substituted_text(substitution: Node) -> str | None:
    """What a command substitution outputs when its text says: `echo`/`printf` with literal
    arguments, or `cat` given a here-document that expands nothing (`$(cat <<'EOF' ...)`,
    as Claude Code writes a pull request's body). None for anything else."""
    inner = substitution.named_children
    if len(inner) != 1:
        return None
    if inner[0].type == "redirected_statement":
        output = _cat_here_document(inner[0])
    else:
        argv = _literal_argv(inner[0])
        name = normalize_name(argv[0].text) if argv else ""
        output = literal_output(name, argv, False) if argv and name in ("echo", "printf") else (
            None)
    return None if output is None else output.replace("\0", "")  # bash drops NUL bytes


def _literal_argv(command: Node) -> list[Word] | None:
    if command.type != "command":
        return None
    parts = command.named_children
    if not parts or parts[0].type != "command_name" or not parts[0].named_children:
        return None
    words = [word_value(parts[0].named_children[0])]
    for part in parts[1:]:
        if part.type not in LEAF_WORDS and part.type not in ("string", "concatenation"):
            return None
        words.append(word_value(part))
    return words


_HERE_DOCUMENT_PARTS = frozenset(("<<", "<<-", "heredoc_start", "heredoc_body", "heredoc_end"))


def _cat_here_document(statement: Node) -> str | None:
    parts = statement.named_children
    argv = _literal_argv(parts[0]) if parts else None
    if argv is None or [w.text for w in argv] not in (["cat"], ["cat", "-"]) or len(parts) != 2:
        return None
    redirect = parts[1]
    if redirect.type != "heredoc_redirect" or any(c.type not in _HERE_DOCUMENT_PARTS
                                                  for c in redirect.children):
        return None  # `cat <<'EOF' | tr a b`: the pipeline sits inside the redirect
    start = next((c for c in redirect.children if c.type == "heredoc_start"), None)
    body = next((c for c in redirect.children if c.type == "heredoc_body"), None)
    if start is None:
        return None
    text = body.text.decode("utf-8", "replace") if body is not None and body.text else ""
    quoted = any(q in (start.text or b"").decode("utf-8", "replace") for q in "'\"\\")
    if not quoted and (any(c in text for c in "$`\\") or (body is not None and
                                                          body.named_children)):
        return None  # bash expands it
    if any(c.type == "<<-" for c in redirect.children):
        text = "\n".join(line.lstrip("\t") for line in text.split("\n"))
    return text
