"""Languages without a parser here (AppleScript/JXA, R, Julia): their programs are searched
for constructs, as data.

A program that contains a construct which starts processes, evaluates or loads code by a
computed name, or deletes files is unparseable (the reason names the construct); any mention
is enough, in a string or a comment too. Calls that write, read or reach the network become
writes, reads and `curl` commands, with the path when it is a plain literal. Each pattern is
one regex pass at most.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gateway.policy.shell.interp.effects import CodeEffects
from gateway.policy.shell.interp.patterns import Patterns, Rx
from gateway.policy.shell.words import Word

MAX_CALLS = 64
"""Calls followed into their arguments; more than that is unparseable (or dynamic words)."""
MAX_ARGS_SPAN = 4096
MAX_FILE_WORDS = 256

LITERAL = r"""'([^'\\\n]{0,4096})'|"([^"\\$@#{}`\n]{0,4096})\""""
"""A string literal whose value is its text: no escapes, no interpolation of any language."""
_LITERAL = re.compile(LITERAL)


@dataclass(frozen=True)
class Table:
    language: str
    unparseable: tuple[tuple[str, Rx], ...]
    """(what it is, regex or alternatives) for constructs that make the program unparseable.
    The patterns must not use numbered groups."""
    writes: Rx = ()
    reads: Rx = ()
    network: Rx = ()
    opens: tuple[tuple[str, int, int], ...] = ()
    """(regex, path argument index, mode argument index) of calls whose mode decides, with
    fopen-style modes (r, w, a, x, c, +)."""
    chdir: str = ""
    flags: int = 0
    compiled: dict[str, Patterns] = field(default_factory=dict, compare=False)

    def patterns(self, key: str) -> Patterns:
        """Compiled once: 'unparseable', 'writes', 'reads', 'network', or 'opensN' for the
        Nth entry of `opens`."""
        if key not in self.compiled:
            if key == "unparseable":
                entries: tuple[tuple[str, Rx], ...] = self.unparseable
            elif key.startswith("opens"):
                entries = ((key, self.opens[int(key[5:])][0]),)
            else:
                entries = ((key, getattr(self, key)),)
            self.compiled[key] = Patterns(entries, self.flags)
        return self.compiled[key]


def analyse_keywords(table: Table, source: str) -> CodeEffects:
    ids = table.patterns("unparseable").identifiers(source)
    problem = _constructs(table, source, ids)
    writes = _words(table, "writes", source, ids)
    reads = _words(table, "reads", source, ids)
    for index, (_, path_at, mode_at) in enumerate(table.opens):
        more = _opens(table, table.patterns(f"opens{index}"), source, ids, (path_at, mode_at),
                      reads, writes)
        problem = problem or more
    commands = [(Word("curl"), word) for word in _words(table, "network", source, ids)]
    if table.chdir and re.search(table.chdir, source, table.flags):
        reads = [_uncertain(w) for w in reads]
        writes = [_uncertain(w) for w in writes]
    return CodeEffects(tuple(commands), (), tuple(reads), tuple(writes), problem)


def _constructs(table: Table, source: str, ids: frozenset[str]) -> str:
    found = table.patterns("unparseable").search(source, ids)
    if found is None:
        return ""
    what, match = found
    return f"{table.language} code {what}: {_snippet(match)}"


def _snippet(match: re.Match[str]) -> str:
    text = match.group(0).strip()
    return text if len(text) <= 40 else text[:37] + "..."


def _literal_value(text: str) -> str | None:
    match = _LITERAL.fullmatch(text.strip())
    if match is None:
        return None
    return match.group(1) if match.group(1) is not None else match.group(2)


TWO_PATHS = frozenset({
    "rename", "renamesync", "move", "movesync", "mv", "copy", "copyfile", "copyfilesync", "cp",
    "cpsync", "cp_r", "symlink", "symlinksync", "link", "linksync", "ln", "ln_s", "ln_sf",
    "hardlink", "copy_file", "install", "duplicate",
})
"""Calls whose second argument is a path written too (the target of a move or copy)."""
_NAME = re.compile(r"([A-Za-z_]\w*)\W*$")
_ARG = r"(?:" + LITERAL + r")"
_FIRST = re.compile(r"(?:\s*\(\s*|[ \t]+)" + _ARG + r"\s*(?:[,);\n]|$)")
_SECOND = re.compile(r"(?:\s*\(\s*|[ \t]+)" + _ARG + r"\s*,\s*" + _ARG + r"\s*(?:[,);\n]|$)")


def _words(table: Table, key: str, source: str, ids: frozenset[str]) -> list[Word]:
    """A word per match: the literal path argument, or a dynamic word when it is not one."""
    words: list[Word] = []
    for match in table.patterns(key).finditer(source, ids):
        if len(words) >= MAX_FILE_WORDS:
            words.append(Word("{?}", dynamic=True, lead_dynamic=True))
            break
        words.append(_literal_at(_FIRST, source, match, 1))
        name = _NAME.search(match.group(0))
        if key == "writes" and name is not None and name.group(1).lower() in TWO_PATHS:
            words.append(_literal_at(_SECOND, source, match, 3))
    return words


def _literal_at(pattern: re.Pattern[str], source: str, match: re.Match[str], group: int) -> Word:
    found = pattern.match(source, match.end())
    if found is None:
        return Word(f"{match.group(0).strip()}(…)", dynamic=True, lead_dynamic=True)
    value = found.group(group)
    return Word(value if value is not None else found.group(group + 1))


def _opens(table: Table, pattern: Patterns, source: str, ids: frozenset[str],
           at: tuple[int, int], reads: list[Word], writes: list[Word]) -> str:
    path_at, mode_at = at
    for count, match in enumerate(pattern.finditer(source, ids)):
        if count == MAX_CALLS:
            return f"{table.language} code opens more files than this analysis follows"
        args = call_args(source, match.end()) or []
        path = _literal_value(args[path_at]) if len(args) > path_at else None
        word = Word(path) if path is not None else Word("{?}", dynamic=True, lead_dynamic=True)
        given = _literal_value(args[mode_at]) if len(args) > mode_at else ("r" if args else None)
        mode = given
        writing = mode is None or bool(set(mode) & set("wax+c"))
        if mode is None or "r" in mode or "+" in mode or not writing:
            reads.append(word)
        if writing:
            writes.append(word)
    return ""


def call_args(text: str, at: int) -> list[str] | None:
    """The top-level arguments of the call whose name ends at `at`: `(a, f(b, c), 'd,e')`
    gives three. None when there is no parenthesis or it does not close nearby."""
    i = at
    end = min(len(text), at + MAX_ARGS_SPAN)
    while i < end and text[i] in " \t\n":
        i += 1
    if i >= end or text[i] != "(":
        return None
    args: list[str] = []
    depth = 0
    start = i + 1
    quote = ""
    i += 1
    while i < end:
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "'\"`":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                if text[start:i].strip() or args:
                    args.append(text[start:i])
                return args
            depth -= 1
        elif char == "," and depth == 0:
            args.append(text[start:i])
            start = i + 1
        i += 1
    return None


def _uncertain(word: Word) -> Word:
    if word.text.startswith(("/", "~")) or word.dynamic:
        return word
    return Word(word.text, dynamic=True)
