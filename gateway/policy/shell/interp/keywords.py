"""Languages without a parser here: their programs are searched for constructs, as data.

A program that contains a construct which starts processes, evaluates or loads code by a
computed name, or deletes files is unparseable (the reason names the construct). Calls that
write, read or reach the network become writes, reads and `curl` commands, with the path when
it is a plain literal. Where a spawning call's only arguments are plain literals (no
interpolation, no concatenation, no escapes) it becomes a script or an argv instead.
Searches run over the text and over a copy with escapes decoded and adjacent literals joined,
so `"\\u0065val"` and `'sys' . 'tem'` are seen; each pattern is one regex pass at most.
"""

from __future__ import annotations

import re
from collections.abc import Callable
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
    spawns: Rx = ()
    """Regex of calls that run a shell string: with plain literal arguments only they become a
    script (one) or an argv (several, when `argv`); any other use is unparseable."""
    argv: bool = False
    spawn_guard: str = ""
    """When set, the spawn names only matter if this matches (JS: child_process)."""
    literal_spawns: str = ""
    """When set, only spawn names matching this may become scripts (JS: execSync, whose
    child has no stdin the code could write to)."""
    mentions: str = ""
    """What may follow a spawn name that is not a call and harmless (JS: `{ execSync }`)."""
    writes: Rx = ()
    reads: Rx = ()
    network: Rx = ()
    opens: tuple[tuple[str, int, int], ...] = ()
    """(regex, path argument index, mode argument index) of calls whose mode decides, with
    fopen-style modes (r, w, a, x, c, +)."""
    open_mode: Callable[[str], str] = lambda mode: mode
    chdir: str = ""
    flags: int = 0
    normalize: Callable[[str], str] = lambda text: text
    checks: tuple[Callable[[str], str], ...] = ()
    """Further language checks: each returns why the program is unparseable, or ''."""
    compiled: dict[str, Patterns] = field(default_factory=dict, compare=False)

    def patterns(self, key: str) -> Patterns:
        """Compiled once: 'unparseable', 'writes', 'reads', 'network', 'spawns',
        'spawn_guard', or 'opensN' for the Nth entry of `opens`."""
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
    decoded = table.normalize(source)
    texts = (source,) if decoded == source else (source, decoded)
    ids = table.patterns("unparseable").identifiers("\n".join(texts))
    problem = _constructs(table, texts, ids)
    for check in table.checks:
        problem = problem or check(source) or (check(decoded) if decoded != source else "")
    scripts: list[str] = []
    commands: list[tuple[Word, ...]] = []
    problem = problem or _spawns(table, texts, ids, scripts, commands)
    writes = _words(table, "writes", source, ids)
    reads = _words(table, "reads", source, ids)
    for index, (_, path_at, mode_at) in enumerate(table.opens):
        more = _opens(table, table.patterns(f"opens{index}"), source, ids, (path_at, mode_at),
                      reads, writes)
        problem = problem or more
    commands.extend((Word("curl"), word) for word in _words(table, "network", source, ids))
    if table.chdir and re.search(table.chdir, source, table.flags):
        reads = [_uncertain(w) for w in reads]
        writes = [_uncertain(w) for w in writes]
    return CodeEffects(tuple(commands), tuple(scripts), tuple(reads), tuple(writes), problem)


def _constructs(table: Table, texts: tuple[str, ...], ids: frozenset[str]) -> str:
    patterns = table.patterns("unparseable")
    for text in texts:
        found = patterns.search(text, ids)
        if found is not None:
            what, match = found
            return f"{table.language} code {what}: {_snippet(match)}"
    return ""


def _snippet(match: re.Match[str]) -> str:
    text = match.group(0).strip()
    return text if len(text) <= 40 else text[:37] + "..."


def _spawns(table: Table, texts: tuple[str, ...], ids: frozenset[str], scripts: list[str],
            commands: list[tuple[Word, ...]]) -> str:
    if not table.spawns:
        return ""
    guard = table.patterns("spawn_guard") if table.spawn_guard else None
    if guard is not None and not any(guard.search(t, ids) for t in texts):
        return ""
    pattern = table.patterns("spawns")
    source = texts[0]
    matches = list(pattern.finditer(source, ids))
    hidden = [len(list(pattern.finditer(text, ids))) for text in texts[1:]]
    if any(count > len(matches) for count in hidden):
        return f"{table.language} code spells a process call with escapes or joined strings"
    if len(matches) > MAX_CALLS:
        return f"{table.language} code starts more processes than this analysis follows"
    literal = re.compile(table.literal_spawns, table.flags) if table.literal_spawns else None
    mentions = re.compile(table.mentions) if table.mentions else None
    for match in matches:
        name = match.group(0).strip()
        if mentions is not None and mentions.match(source, match.end()):
            continue
        if literal is not None and not literal.fullmatch(name):
            return f"{table.language} code runs a process with {name}"
        values = _spawn_values(source, match.end())
        if values is None:
            return f"{table.language} code {name} with arguments computed at run time"
        if len(values) == 1:
            scripts.append(values[0])
        elif table.argv:
            commands.append(tuple(Word(v) for v in values))
        else:
            return f"{table.language} code {name} with several arguments"
    return ""


_BARE_ARGS = re.compile(r"[ \t]+((?:" + LITERAL + r")(?:\s*,\s*(?:" + LITERAL + r"))*)"
                        r"\s*(?=$|[;\n)}]|\b(?:or|and|if|unless)\b|\|\||&&)")


def _spawn_values(source: str, at: int) -> list[str] | None:
    """The literal arguments of `name(...)` or `name 'a', 'b'`; None when any is not one."""
    args = call_args(source, at)
    if args is None:
        bare = _BARE_ARGS.match(source, at)
        if bare is None:
            return None
        args = call_args(f"({bare.group(1)})", 0)
    values = [_literal_value(a) for a in args or []]
    if not values or any(v is None for v in values):
        return None
    return [v for v in values if v is not None]


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
        mode = None if given is None else table.open_mode(given)
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
