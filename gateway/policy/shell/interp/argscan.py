"""Interpreter options as data, and one scanner that splits an argv into options and operands.

An option this table does not know is an error for most interpreters (they refuse to run);
the one case that matters is an unknown long option followed by a plain word, which the
interpreter may take as that option's value or as the script: that is reported, not guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gateway.policy.shell.words import Word


def _set(spaced: str) -> frozenset[str]:
    return frozenset(spaced.split())


@dataclass(frozen=True)
class Spec:
    flags: frozenset[str] = frozenset()
    """Options without a value (a long one may still carry `=value`: --inspect=9229)."""
    values: frozenset[str] = frozenset()
    """Options with a value: attached (-Wd, --opt=v) or the next word."""
    rest: Mapping[str, re.Pattern[str]] = field(default_factory=dict)
    """Short options whose value is attached only, possibly empty: the pattern says how much
    of the word it takes (perl -l takes octal digits, -i.bak the rest); clustering goes on."""
    optional: frozenset[str] = frozenset()
    """Options that take the next word as their value only when it is not an option."""
    aliases: Mapping[str, str] = field(default_factory=dict)
    """Other spellings -> the canonical one used in `flags`/`values`."""
    ends: frozenset[str] = frozenset()
    """Options after which every word is an operand (python -c CODE ARGS)."""
    clusters: bool = True
    flag_pattern: re.Pattern[str] | None = None
    """Long options matching this are flags (node --no-*, --experimental-*)."""
    fold_case: bool = False


def spec(flags: str = "", values: str = "", rest: str | Mapping[str, str] = "",
         optional: str = "", aliases: Mapping[str, str] | None = None, ends: str = "",
         clusters: bool = True, flag_pattern: str | None = None, fold_case: bool = False) -> Spec:
    takes = {opt: ".*" for opt in rest.split()} if isinstance(rest, str) else dict(rest)
    return Spec(_set(flags), _set(values), {o: re.compile(p, re.S) for o, p in takes.items()},
                _set(optional), dict(aliases or {}), _set(ends), clusters,
                re.compile(flag_pattern) if flag_pattern else None, fold_case)


@dataclass(frozen=True)
class Scanned:
    options: tuple[tuple[str, Word | None], ...]
    """(canonical option, its value) in order; None for flags and missing values."""
    operands: tuple[Word, ...]
    """The words after the options: script or code operand first, then its arguments."""
    problem: str = ""

    def names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.options)

    def values(self, *names: str) -> list[Word]:
        return [value for name, value in self.options if name in names and value is not None]

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)


def _part(word: Word, text: str) -> Word:
    """Part of `word`: where a run-time part sits in it is unknown, so the part inherits it."""
    return Word(text, dynamic=word.dynamic, lead_dynamic=word.dynamic)


def _is_option(word: Word) -> bool:
    return word.text.startswith("-") and word.text != "-"


def scan(spec_: Spec, args: Sequence[Word]) -> Scanned:
    options: list[tuple[str, Word | None]] = []
    count = len(args)
    i = 0

    def done(problem: str = "", at: int | None = None) -> Scanned:
        return Scanned(tuple(options), tuple(args[i if at is None else at:]), problem)

    while i < count:
        word = args[i]
        text = word.text
        if word.lead_dynamic:
            return done(f"option computed at run time: {text}")
        if text == "--":
            i += 1
            break
        if not _is_option(word):
            break
        i += 1
        if text.startswith("--") or not spec_.clusters:
            name, eq, attached = text.partition("=")
            name = name.lower() if spec_.fold_case else name
            name = spec_.aliases.get(name, name)
            value: Word | None = _part(word, attached) if eq else None
            if (not spec_.clusters and _unknown(spec_, name)
                    and (name[:2] in spec_.values or name[:2] in spec_.rest)):
                name, value, eq = name[:2], _part(word, text[2:]), "="  # lua -e'code'
            if name in spec_.values and not eq:
                if i < count and _is_option(args[i]):
                    return done(f"option {name} would take the option {args[i].text} as its value")
                value, i = (args[i], i + 1) if i < count else (None, i)
            elif name in spec_.optional and not eq and i < count and not _is_option(args[i]):
                value, i = args[i], i + 1
            elif _unknown(spec_, name):
                if not name.startswith("--"):
                    return done(f"unknown option {name}")
                if not eq and i < count and not _is_option(args[i]):
                    return done(f"unknown option {name} may take {args[i].text!r} as its value")
            options.append((name, value))
            if name in spec_.ends:
                break
            continue
        problem = _cluster(spec_, word, args, i, options)
        if isinstance(problem, str):
            return done(problem)
        i = problem
        if options and options[-1][0] in spec_.ends:
            break
    return done()


def _unknown(spec_: Spec, name: str) -> bool:
    known = (spec_.values, spec_.flags, spec_.optional, spec_.rest)
    if any(name in group for group in known):
        return False
    return not (spec_.flag_pattern and spec_.flag_pattern.match(name))


def _cluster(spec_: Spec, word: Word, args: Sequence[Word], i: int,
             options: list[tuple[str, Word | None]]) -> int | str:
    """-Bc CODE: returns the index after the cluster (and its value word) or a problem."""
    text = word.text
    j = 1
    while j < len(text):
        opt = spec_.aliases.get("-" + text[j], "-" + text[j])
        attached = text[j + 1:]
        if opt in spec_.rest:
            taken = spec_.rest[opt].match(text, j + 1)
            end = taken.end() if taken else j + 1
            options.append((opt, _part(word, text[j + 1:end])))
            j = end
            continue
        if opt in spec_.values or opt in spec_.optional:
            if attached:
                options.append((opt, _part(word, attached)))
            elif i < len(args) and not _is_option(args[i]):
                options.append((opt, args[i]))
                return i + 1
            elif i < len(args) and opt in spec_.values:
                return f"option {opt} would take the option {args[i].text} as its value"
            else:
                options.append((opt, None))
            return i
        if opt not in spec_.flags:
            return f"unknown option {opt} in {text}"
        options.append((opt, None))
        j += 1
    return i
