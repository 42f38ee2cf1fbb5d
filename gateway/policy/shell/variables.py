"""The values a `$NAME` in a path may hold: every value the command binds to NAME anywhere,
and the inherited one where a use may come before any binding.

The scan is flow-insensitive on purpose: a loop runs its body again after a later binding
(`f=a; for i in 1 2; do cat $f; f=.env; done` reads .env), a branch may or may not bind
(`if ...; then f=.env; else f=a; fi`), a function body runs where it is called. So a path is
checked with each value the name may hold; only a binding that runs unconditionally at the
top level before every use keeps the inherited value out. Names bash sets itself (`$_`,
`PWD` after a `cd`, `REPLY`, ...) never come from the hook's environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from gateway.policy.shell.words import Word

MAX_ALTERNATIVES = 16
"""Values one path is checked with; more, and the path is computed at run time."""
_REFERENCE_TEXT = (
    r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*|[0-9]+|@)(?:(%%|%|##|#|:-|-)([^{}$`\\'\"]*))?\}"
    r"|([A-Za-z_][A-Za-z0-9_]*|[0-9]|@))")
"""$NAME, ${NAME}, and ${NAME%WORD} ${NAME%%WORD} ${NAME#WORD} ${NAME##WORD}
${NAME:-WORD} ${NAME-WORD} with a literal WORD (compiled on first use: re caches it)."""
_GLOB = frozenset("*?[")
_FIELD_SEPARATORS = r"[ \t\n]+"
BASH_MANAGED = frozenset({
    "_", "PWD", "OLDPWD", "REPLY", "RANDOM", "SRANDOM", "SECONDS", "LINENO", "BASHPID",
    "BASH_REMATCH", "PIPESTATUS", "EPOCHSECONDS", "EPOCHREALTIME", "OPTARG", "OPTIND",
    "DIRSTACK", "COLUMNS", "LINES", "HISTCMD", "FUNCNAME", "BASH_SOURCE", "BASH_LINENO",
    "BASH_ARGV", "BASH_ARGC", "BASH_COMMAND", "BASH_SUBSHELL", "SHLVL", "PPID", "GROUPS",
    "COPROC", "BASH_ARGV0", "MAPFILE",
})
"""Variables bash itself sets while the command runs: the hook's value is not theirs."""


@dataclass
class Variables:
    bound: dict[str, list[Word]] = field(default_factory=dict)
    """Every value bound to a name anywhere in the command (a dynamic Word: unknown)."""
    dominated: set[str] = field(default_factory=set)
    """Names bound unconditionally at the top level, before the walk reached this point."""
    inherited: set[str] = field(default_factory=set)
    """Names used where their value may still be the inherited one."""

    def bind(self, name: str, value: Word, unconditional: bool = False,
             settles: bool = False) -> None:
        """`settles`: a dynamic value known once the walk ends (`$(mktemp -d)`)."""
        self.bound.setdefault(name, []).append(value)
        if unconditional and (settles or not value.dynamic):
            self.dominated.add(name)

    def unknown(self, name: str) -> None:
        self.bind(name, Word(f"${name}", dynamic=True))

    def used(self, word: Word) -> None:
        """A path word is recorded: the names it uses may still hold inherited values."""
        if word.dynamic:
            for found in re.finditer(_REFERENCE_TEXT, word.text):
                name = found.group(1) or found.group(4)
                if name not in self.dominated:
                    self.inherited.add(name)

    def values(self, name: str, environment: Callable[[str], str | None],
               cwds: Iterable[str] | None) -> list[Word] | None:
        """What `$name` may expand to, or None when that is not known before running."""
        found: list[Word] = list(self.bound.get(name, ()))
        if name in self.inherited or not found:
            if name == "PWD" and cwds is not None:
                found.extend(Word(c) for c in cwds)
            elif name in BASH_MANAGED:
                return None
            else:
                inherited = environment(name)
                if inherited is None:
                    return None
                found.append(Word(inherited))
        if any(v.dynamic and not v.pattern for v in found):
            return None
        return found

    def alternatives(self, word: Word, environment: Callable[[str], str | None],
                     cwds: Iterable[str] | None) -> list[Word]:
        """The word with each combination of values its `$NAME`s may hold ([word] itself,
        still dynamic, when one of them is not known or there are too many). A value known
        only by its pattern (a file find selects) makes a Word with that pattern."""
        if word.pattern:
            if "$" not in word.pattern:
                return [word]
            # a pattern built on a variable (ln -s "$HOME" h: "$HOME/**")
            found = self.alternatives(Word(word.pattern, dynamic=True), environment, cwds)
            return [Word(w.text, dynamic=True, pattern=w.text) if not w.dynamic else word
                    for w in found]
        if not word.dynamic or word.text.count("$") > 8:
            return [word]
        pieces = re.split(_REFERENCE_TEXT, word.text)
        literal = pieces[::5]
        if any(c in "$`" for piece in literal for c in piece) or len(pieces) < 6:
            return [word]  # other expansions (substitutions, ${x/a/b}, $@) stay unknown
        combos: list[_Combo] = [_Combo(literal[0], literal[0])]
        for k in range(1, len(pieces), 5):
            name, operator, argument = pieces[k] or pieces[k + 3], pieces[k + 1], pieces[k + 2]
            options = self.values(name, environment, cwds)
            if options is not None and operator:
                options = _operated(options, operator, argument or "")
            if options is None:
                return [word]
            after = literal[(k + 4) // 5]
            combos = [combo.then(value, after) for combo in combos for value in options]
            if len(combos) > MAX_ALTERNATIVES:
                return [word]
        quoted_glob = not word.globby and any(not _GLOB.isdisjoint(p) for p in literal)
        out: list[Word] = []
        for combo in combos:
            if (combo.globby or combo.selected) and quoted_glob:
                return [word]  # a quoted [ or * beside a pattern: no one pattern says both
            if combo.selected:
                if re.search(_FIELD_SEPARATORS, combo.pattern) or combo.static_glob:
                    return [word]
                out.append(Word(combo.text, dynamic=True, pattern=combo.pattern))
                continue
            globby = combo.globby or word.globby
            out.append(Word(combo.text, globby=globby))
            # An unquoted $x is also split into fields: each field may be a path.
            fields = re.split(_FIELD_SEPARATORS, combo.text.strip())
            if len(fields) > 1:
                out.extend(Word(f, globby=globby) for f in fields if f)
        return out


def _operated(values: list[Word], operator: str, argument: str) -> list[Word] | None:
    """The values after ${NAME<operator>argument}; None when that is not known here."""
    if operator in (":-", "-"):
        return [*values, Word(argument)]  # the value, or (unset or empty) the argument
    out: list[Word] = []
    for value in values:
        known = not (value.pattern or value.globby or not _GLOB.isdisjoint(value.text))
        text = value.pattern or value.text
        if known:
            out.append(Word(_strip(text, operator, argument)))
            continue
        # a pattern: a literal suffix or prefix it ends or starts with, the last or all but
        # the last name (${f##*/}, ${f%/*}); nothing else is followed
        if operator in ("%", "%%") and _GLOB.isdisjoint(argument) and text.endswith(argument):
            stripped = text[: len(text) - len(argument)]
        elif operator in ("#", "##") and _GLOB.isdisjoint(argument) and (
                text.startswith(argument)):
            stripped = text[len(argument):]
        elif operator == "##" and argument == "*/":
            stripped = text.rsplit("/", 1)[-1]
        elif operator == "%" and argument == "/*" and "/" in text:
            stripped = text.rsplit("/", 1)[0]
        else:
            return None
        out.append(Word(stripped, dynamic=True, pattern=stripped) if value.pattern
                   else Word(stripped, globby=True))
    return out


def _strip(text: str, operator: str, argument: str) -> str:
    """bash's ${x%w} ${x%%w} ${x#w} ${x##w} on a known value."""
    import fnmatch

    cuts = range(len(text) + 1)
    if operator in ("%", "%%"):
        order = reversed(cuts) if operator == "%" else iter(cuts)
        for i in order:
            if fnmatch.fnmatchcase(text[i:], argument):
                return text[:i]
        return text
    order = iter(cuts) if operator == "#" else reversed(cuts)
    for i in order:
        if fnmatch.fnmatchcase(text[:i], argument):
            return text[i:]
    return text


@dataclass(frozen=True)
class _Combo:
    """One combination of values, as text and as a path pattern."""

    text: str
    pattern: str
    globby: bool = False
    """A value with glob characters: bash globs an unquoted one (read as a pattern, a
    superset of the one name it is when quoted)."""
    selected: bool = False
    """A value known only by its pattern."""
    static_glob: bool = False
    """A literal value with glob characters beside a pattern value."""

    def then(self, value: Word, after: str) -> _Combo:
        glob = not _GLOB.isdisjoint(value.text) and not value.pattern
        return _Combo(self.text + value.text + after,
                      self.pattern + (value.pattern or value.text) + after,
                      self.globby or value.globby or glob,
                      self.selected or bool(value.pattern),
                      self.static_glob or glob)
