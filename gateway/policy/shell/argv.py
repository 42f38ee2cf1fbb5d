"""An argv seen as options and operands, using the option data in `options.py`.

Bundled short options are split, long options resolve by unique prefix, and every spelling
maps to one canonical name, so rules and commands compare option sets, not text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.policy.shell.options import OPTIONS
from gateway.policy.shell.words import Word


@dataclass(frozen=True)
class Spec:
    canon: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    values: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()
    """Options whose value is optional and, when given, attached (xargs -i, --replace=R)."""
    longs: tuple[str, ...] = ()
    sub: bool = False
    single_dash_long: bool = False
    unordered: bool = False
    plus_means: str = ""
    options_after_dashdash: bool = False
    """Option-like words after `--` still count as options (git push -- --force: denied
    although git reads it as a refspec, so no spelling of a forced push gets through)."""


def _spec(raw: Mapping[str, Any]) -> Spec:
    canon: dict[str, tuple[str, ...]] = {}
    for group in raw.get("same", []):
        for spelling in group:
            canon[spelling] = (group[0],)
    for spelling, meaning in raw.get("means", {}).items():
        canon[spelling] = tuple(meaning)
    values = frozenset(raw.get("values", []))
    optional = frozenset(raw.get("optional", []))
    sdl = bool(raw.get("single_dash_long", False))
    longs = tuple(sorted({s for s in (*canon, *values, *optional)
                          if s.startswith("--" if not sdl else "-")}))
    return Spec(canon, values, optional, longs, bool(raw.get("sub")), sdl,
                bool(raw.get("unordered")), str(raw.get("plus_means", "")),
                bool(raw.get("options_after_dashdash")))


SPECS: dict[str, Spec] = {key: _spec(raw) for key, raw in OPTIONS.items()}
_PLAIN = Spec()


def normalize_name(text: str) -> str:
    """/usr/bin/rm, ./rm and RM all name rm for matching."""
    return text.rstrip("/").rsplit("/", 1)[-1].lower() if "/" in text else text.lower()


@dataclass(frozen=True)
class Invocation:
    """A simple command's argv as the program would understand it."""

    name: str
    flags: Mapping[str, tuple[str, ...]]
    """Canonical option -> the values given to it (empty tuple for switches)."""
    operands: tuple[Word, ...]
    unordered: bool = False
    flaggy_dynamic: bool = False
    """An argument computed at run time could turn out to be an option."""


def _resolve_long(spec: Spec, opt: str) -> str:
    if opt in spec.canon or opt in spec.values or not spec.longs:
        return opt
    hits = [known for known in spec.longs if known.startswith(opt)]
    return hits[0] if len(hits) == 1 else opt


def analyze(name: str, args: Sequence[Word], *, appended: bool = False) -> Invocation:
    """Split `args` of command `name` into canonical options and operands.

    `appended`: more arguments are added at run time (xargs, parallel), so options the
    command does not show here may still reach it.
    """
    key = name
    spec = SPECS.get(key, _PLAIN)
    flags: dict[str, list[str]] = {}
    operands: list[Word] = []
    flaggy = appended
    after_sub = 0
    ended = False
    i = 0
    while i < len(args):
        word = args[i]
        text = word.text
        i += 1
        optioned = not ended or spec.options_after_dashdash
        if optioned and word.may_be_option:
            flaggy = True
            operands.append(word)
            continue
        if not ended and text == "--":
            ended = True
            continue
        if optioned and len(text) > 1 and text[0] == "-":
            if text.startswith("--") or spec.single_dash_long:
                i = _long_option(spec, flags, text, args, i)
            else:
                i = _short_options(spec, flags, text, args, i)
            continue
        if spec.plus_means and text.startswith("+") and len(text) > 1:
            _add(spec, flags, spec.plus_means, None)
        operands.append(word)
        if spec.sub and len(operands) == after_sub + 1 and not word.dynamic:
            child = SPECS.get(f"{key} {text}")
            if child is not None:
                key, spec, after_sub = f"{key} {text}", child, len(operands)
    return Invocation(
        name,
        {k: tuple(v) for k, v in flags.items()},
        tuple(operands),
        spec.unordered,
        flaggy,
    )


def _add(spec: Spec, flags: dict[str, list[str]], opt: str, value: str | None) -> None:
    for canonical in spec.canon.get(opt, (opt,)):
        bucket = flags.setdefault(canonical, [])
        if value is not None:
            bucket.append(value)


def _long_option(spec: Spec, flags: dict[str, list[str]], text: str, args: Sequence[Word],
                 i: int) -> int:
    """`--opt`, `--opt=value` or `--opt value` (for `spec.single_dash_long`: `-opt`);
    returns where the next argument is."""
    opt, eq, value = text.partition("=")
    opt = _resolve_long(spec, opt)
    if opt in spec.optional:
        _add(spec, flags, opt, value if eq else None)
        return i
    if not eq and opt in spec.values and i < len(args):
        value, i = args[i].text, i + 1
    _add(spec, flags, opt, value if (eq or opt in spec.values) else None)
    return i


def _short_options(spec: Spec, flags: dict[str, list[str]], text: str, args: Sequence[Word],
                   i: int) -> int:
    """A cluster of short options (`-rf`), the last of which may take the rest of the word
    or the next argument as its value; returns where the next argument is."""
    chars = text[1:]
    for j, char in enumerate(chars):
        opt = "-" + char
        if opt in spec.optional:
            _add(spec, flags, opt, chars[j + 1 :] or None)
            break
        if opt in spec.values:
            value = chars[j + 1 :]
            if not value and i < len(args):
                value, i = args[i].text, i + 1
            _add(spec, flags, opt, value)
            break
        _add(spec, flags, opt, None)
    return i
