"""Static values of program expressions, in any language: strings with the parts only known at
run time.

A Value is a tuple of parts, each a str or None (unknown). The analysers fold only what the
language would compute without side effects (literals, concatenation, names bound once);
everything else is unknown.
"""

from __future__ import annotations

import shlex

from gateway.policy.shell.words import Word

Part = str | None
Value = tuple[Part, ...]
UNKNOWN: Value = (None,)
PLACEHOLDER = "{?}"


def concat(*values: Value) -> Value:
    parts: list[Part] = []
    for value in values:
        for part in value:
            if part is None:
                if not parts or parts[-1] is not None:
                    parts.append(None)
            elif parts and parts[-1] is not None:
                parts[-1] += part
            elif part:
                parts.append(part)
    return tuple(parts)


def static(value: Value) -> str | None:
    """The text when every part is known."""
    if any(part is None for part in value):
        return None
    return "".join(value)  # type: ignore[arg-type]


def to_word(value: Value) -> Word:
    text = "".join(PLACEHOLDER if part is None else part for part in value)
    dynamic = any(part is None for part in value)
    return Word(text, dynamic=dynamic, lead_dynamic=bool(value) and value[0] is None)


def to_bash(value: Value) -> str:
    """The value as one Bash word: unknown parts become an expansion, so Bash sees them too."""
    if not value:
        return "''"
    return "".join('"$py_value"' if part is None else shlex.quote(part) for part in value)


def join(*values: Value) -> Value:
    """Path joining: an absolute part starts over."""
    result: Value = ()
    for value in values:
        first = value[0] if value else ""
        if (first is not None and first.startswith("/")) or not result:
            result = value
        else:
            last = result[-1]
            sep: Value = () if last is not None and last.endswith("/") else ("/",)
            result = concat(result, sep, value)
    return result
