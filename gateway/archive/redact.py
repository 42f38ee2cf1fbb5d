"""Pure: secret redaction, line by line in the archived copy of a transcript and value by value
in an audit record's tool input.

No pydantic here: the command hook redacts audit records and must stay light to import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from gateway.errors import ConfigError


class RedactionRule(Protocol):
    """What a rule needs: `gateway.compaction.RedactionRule` from a policy, or `Pattern`."""

    @property
    def id(self) -> str: ...

    @property
    def pattern(self) -> str: ...

    @property
    def replacement(self) -> str: ...


class Pattern(NamedTuple):
    """A rule as plain data (a NamedTuple: the command hook pays ~1 ms per dataclass)."""

    id: str
    pattern: str
    replacement: str = "[REDACTED:{id}]"


# Builtin patterns stop at characters that end a JSON string (quote, backslash) so a
# replacement never breaks the JSONL line it sits in.
BUILTIN_RULES: tuple[Pattern, ...] = (
    # Every pattern starts with a literal (no leading \b or lookbehind): the regex engine then
    # skips ahead at memchr speed, ~0.5 ms per MB per rule instead of ~10.
    Pattern(id="builtin.anthropic-key", pattern=r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    Pattern(id="builtin.openai-key", pattern=r"sk-(?:proj-)?[A-Za-z0-9_\-]{32,}"),
    Pattern(id="builtin.aws-access-key", pattern=r"(?:AKIA|ASIA)[0-9A-Z]{16}"),
    Pattern(
        id="builtin.github-token",
        pattern=r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})",
    ),
    Pattern(id="builtin.slack-token", pattern=r"xox[abposr]-[A-Za-z0-9\-]{10,}"),
    Pattern(id="builtin.google-api-key", pattern=r"AIza[0-9A-Za-z_\-]{35}"),
    Pattern(
        id="builtin.jwt",
        pattern=r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    ),
    Pattern(
        # Capitalised only: a case-insensitive prefix would cost ~6 ms per MB.
        id="builtin.bearer-token",
        pattern=r"Bearer [A-Za-z0-9._~+/=\-]{20,}",
    ),
    Pattern(
        id="builtin.private-key",
        pattern=(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
            r".*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----"
        ),
    ),
)


class _Compiled(NamedTuple):
    id: str
    regex: re.Pattern[bytes]
    replacement: bytes


class Redactor:
    """Applies rules to one line at a time and remembers which rule ids matched."""

    def __init__(self, rules: Sequence[RedactionRule]) -> None:
        self._rules = tuple(_compile(rule) for rule in rules)
        self._any = _alternation(self._rules)

    def __bool__(self) -> bool:
        return bool(self._rules)

    def matches_any(self, block: bytes) -> bool:
        """Cheap pre-check over many lines: most blocks hold no secret at all."""
        if self._any is not None:
            return self._any.search(block) is not None
        return any(rule.regex.search(block) for rule in self._rules)

    def apply(self, line: bytes) -> tuple[bytes, frozenset[str]]:
        """The redacted line and the ids of the rules that matched it."""
        hits: set[str] = set()
        for rule in self._rules:
            line, count = rule.regex.subn(_literal(rule.replacement), line)
            if count:
                hits.add(rule.id)
        return line, frozenset(hits)


def redaction_rules(custom: Iterable[RedactionRule], builtin: bool) -> tuple[RedactionRule, ...]:
    """Configured rules, builtin ones first when enabled."""
    return (*(BUILTIN_RULES if builtin else ()), *custom)


def redact_json(value: Any, redactor: Redactor) -> tuple[Any, frozenset[str]]:
    """A JSON value with every string redacted as it reads in a JSONL transcript (escaped, so
    the rules behave exactly as on archives: a private key's newlines are `\\n` there too)."""
    hits: set[str] = set()

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            encoded = json.dumps(item, ensure_ascii=False).encode()
            if not redactor.matches_any(encoded):
                return item
            redacted, ids = redactor.apply(encoded)
            hits.update(ids)
            try:
                decoded = json.loads(redacted)
            except ValueError:  # a custom rule ate an escape: keep the redacted text as is
                return redacted[1:-1].decode(errors="replace")
            return decoded if isinstance(decoded, str) else redacted.decode(errors="replace")
        if isinstance(item, Mapping):
            return {str(k): walk(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(v) for v in item]
        return item

    return walk(value), frozenset(hits)


def patterns_from(section: Mapping[str, Any] | None) -> tuple[Pattern, ...]:
    """The `redact:` rules of a merged `compaction:` section held as plain data (a compiled
    policy keeps it so), without validating it again through pydantic."""
    rules = (section or {}).get("redact") or ()
    return tuple(
        Pattern(str(r["id"]), str(r["pattern"]), str(r.get("replacement", "[REDACTED:{id}]")))
        for r in rules
        if isinstance(r, Mapping) and "id" in r and "pattern" in r
    )


def _compile(rule: RedactionRule) -> _Compiled:
    try:
        regex = re.compile(rule.pattern.encode())
    except re.error as exc:
        raise ConfigError(
            f"redaction rule {rule.id!r}: bad pattern {rule.pattern!r}: {exc}"
        ) from exc
    replacement = rule.replacement.replace("{id}", rule.id).encode()
    return _Compiled(rule.id, regex, replacement)


def _alternation(rules: Sequence[_Compiled]) -> re.Pattern[bytes] | None:
    """Every rule in one pattern, for the pre-check: one scan instead of one per rule. None
    when they cannot be joined: a rule with groups (joined, its backreferences would point
    elsewhere) or global inline flags."""
    if not rules or any(rule.regex.groups for rule in rules):
        return None
    try:
        return re.compile(b"|".join(b"(?:" + rule.regex.pattern + b")" for rule in rules))
    except re.error:
        return None


def _literal(replacement: bytes) -> Callable[[re.Match[bytes]], bytes]:
    # A function replacement: backslashes and group references in it stay literal.
    return lambda _match: replacement
