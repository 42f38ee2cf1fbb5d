"""bash's own string evaluation: where a value's text becomes code without `eval`.

Arithmetic evaluates variable contents recursively, array subscripts included, so
`x='a[$(rm -rf ~)]'; echo $((x))` runs rm; so do `let`, `[[ $x -eq 1 ]]`, `declare -i`,
`${!x}`, `${x@P}`, `${a[x]}`, and builtins that take a variable *name* which may carry a
subscript (`declare`, `test -v`, `printf -v`, `read`, `unset`, `mapfile`, `export`, `local`).

Values the command sets are tracked (literal text, or computed at run time); a variable the
command does not set comes from the session's environment, which the agent does not write
(README: known limitations). The scan is unparseable when an evaluating context can reach a
value holding command text, or a value computed at run time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tree_sitter import Node

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LATENT = re.compile(r"\$\(|`|\$\{|\[[^\]]*\$")
_PLAIN = re.compile(r"^[\sA-Za-z0-9_+\-*/%<>=!&|^~?:,.()]*$")
NAME_TAKING = frozenset({"declare", "typeset", "local", "export", "readonly", "unset", "read",
                         "mapfile", "readarray", "printf", "test", "[", "let", "getopts"})
NUMERIC_PRODUCERS = frozenset({"wc", "date", "seq", "nproc", "expr", "id", "stat", "getconf",
                               "du", "bc"})
"""Producers whose output in arithmetic is a number, unless their own arguments carry command
text (date '+a[$(...)]' prints it): `$(( $(wc -l < f) + 1 ))` stays decidable."""
_ARITH_TEST_OPS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


def latent(text: str) -> bool:
    """Text that bash would run if it evaluated it as an arithmetic name or subscript."""
    return _LATENT.search(text) is not None


@dataclass
class EvalHazards:
    """Collected over one scan; `problem()` says whether an evaluation can reach code."""

    values: dict[str, str] = field(default_factory=dict)
    """Variable -> 'plain' | 'latent' | 'dynamic' | the identifier it names."""
    referenced: set[str] = field(default_factory=set)
    immediate: str = ""

    def assign(self, name: str, text: str, dynamic: bool) -> None:
        if dynamic:
            kind = "dynamic"
        elif latent(text):
            kind = "latent"
        elif _IDENT.match(text.strip()):
            kind = text.strip()
        else:
            kind = "plain" if _PLAIN.match(text) else "latent"
        previous = self.values.get(name)
        if previous in ("dynamic", "latent"):
            return  # the worst value a variable ever holds is the one that counts
        self.values[name] = kind

    def flag(self, why: str) -> None:
        self.immediate = self.immediate or why

    def problem(self) -> str:
        if self.immediate:
            return self.immediate
        for name in sorted(self.referenced):
            seen: set[str] = set()
            current = name
            while current in self.values and current not in seen:
                seen.add(current)
                kind = self.values[current]
                if kind in ("dynamic", "latent"):
                    what = ("is computed at run time" if kind == "dynamic"
                            else "holds command text")
                    return (f"bash evaluates the value of {name}, which {what} "
                            "(arithmetic, a subscript, ${!x} or ${x@P} would run it)")
                if kind == "plain":
                    break
                current = kind
        return ""

    # -- what the walker reports -----------------------------------------------------------
    def context(self, node: Node) -> None:
        """An evaluating subtree (arithmetic, subscript, [[ -eq ]]): names and substitutions."""
        stack = [node]
        while stack:
            current = stack.pop()
            kind = current.type
            text = _text(current)
            if kind in ("variable_name", "word") and _IDENT.match(text):
                self.referenced.add(text)
            elif kind in ("string", "raw_string") and latent(text.strip("'\"")):
                self.flag(f"bash evaluates {text[:60]} as an expression")
            elif kind == "command_substitution":
                if _producer(current) not in NUMERIC_PRODUCERS or latent(text[2:-1]):
                    self.flag("bash evaluates the output of a command substitution as an "
                              "expression (it could hold a[$(...)])")
                continue
            stack.extend(current.named_children)

    def expansion(self, node: Node) -> None:
        """${!x} (indirection) and ${x@P} (prompt expansion) evaluate x's value; so does a
        substring's offset and length (${s:x:n} is arithmetic)."""
        text = _text(node)
        colons = [i for i, c in enumerate(node.children) if c.type == ":"]
        if colons:
            for child in node.children[colons[0] + 1:]:
                if child.is_named:
                    self.context(child)
        if text.startswith("${!") or text.endswith("@P}") or "@P}" in text:
            for child in node.named_children:
                if child.type == "variable_name":
                    self.referenced.add(_text(child))
            if "@P}" in text and not any(c.type == "variable_name" for c in node.named_children):
                self.flag("${...@P} expands a prompt string computed at run time")

    def name_arguments(self, command: str, args: list[tuple[str, bool]]) -> None:
        """Builtins that take variable names: a name with a subscript is evaluated."""
        for text, dynamic in args:
            if dynamic and not text.startswith("-"):
                self.flag(f"{command} gets a variable name computed at run time")
            elif "[" in text and latent(text):
                self.flag(f"{command} evaluates the subscript in {text[:60]}")
            elif command == "let" and latent(text):
                self.flag(f"let evaluates {text[:60]}")
            elif command == "let":
                self.referenced.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))

    def subscript(self, target: str) -> None:
        """`a[SUB]=v`: bash expands SUB and, for an indexed array, evaluates the result as
        arithmetic: command text in SUB runs; a variable in it runs what its value holds."""
        sub = target.split("[", 1)[1] if "[" in target else ""
        if "$(" in sub or "`" in sub or "${!" in sub or "@P}" in sub:
            self.flag(f"an assignment evaluates the subscript in {target[:60]}")
            return
        self.referenced.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sub))

    def test_operands(self, node: Node) -> None:
        """[[ A -eq B ]]: the operands of arithmetic comparisons are evaluated."""
        stack = [node]
        while stack:
            current = stack.pop()
            if current.type == "binary_expression":
                ops = [c for c in current.children if c.type == "test_operator"]
                if any(_text(op) in _ARITH_TEST_OPS for op in ops):
                    for operand in current.named_children:
                        if operand.type != "test_operator":
                            self.context(operand)
                    continue
            if current.type == "unary_expression" and any(
                    _text(c) == "-v" for c in current.children):
                for operand in current.named_children:
                    if operand.type != "test_operator" and latent(_text(operand)):
                        self.flag(f"[[ -v ]] evaluates the subscript in {_text(operand)[:60]}")
            stack.extend(current.named_children)


def _producer(substitution: Node) -> str:
    """The command name of a substitution holding exactly one simple command ('' else)."""
    children = substitution.named_children
    if len(children) == 1 and children[0].type == "redirected_statement":
        body = children[0].child_by_field_name("body")
        children = [body] if body is not None else []
    if len(children) != 1 or children[0].type != "command":
        return ""
    name = children[0].child_by_field_name("name")
    return _text(name).rsplit("/", 1)[-1] if name is not None else ""


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""
