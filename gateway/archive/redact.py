"""Pure: secret redaction applied line by line to the archived copy of a transcript."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from gateway.archive.config import RedactionRule
from gateway.errors import ConfigError

# Builtin patterns stop at characters that end a JSON string (quote, backslash) so a
# replacement never breaks the JSONL line it sits in.
BUILTIN_RULES: tuple[RedactionRule, ...] = (
    # Every pattern starts with a literal (no leading \b or lookbehind): the regex engine then
    # skips ahead at memchr speed, ~0.5 ms per MB per rule instead of ~10.
    RedactionRule(id="builtin.anthropic-key", pattern=r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    RedactionRule(id="builtin.openai-key", pattern=r"sk-(?:proj-)?[A-Za-z0-9_\-]{32,}"),
    RedactionRule(id="builtin.aws-access-key", pattern=r"(?:AKIA|ASIA)[0-9A-Z]{16}"),
    RedactionRule(
        id="builtin.github-token",
        pattern=r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})",
    ),
    RedactionRule(id="builtin.slack-token", pattern=r"xox[abposr]-[A-Za-z0-9\-]{10,}"),
    RedactionRule(id="builtin.google-api-key", pattern=r"AIza[0-9A-Za-z_\-]{35}"),
    RedactionRule(
        id="builtin.jwt",
        pattern=r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    ),
    RedactionRule(
        # Capitalised only: a case-insensitive prefix would cost ~6 ms per MB.
        id="builtin.bearer-token",
        pattern=r"Bearer [A-Za-z0-9._~+/=\-]{20,}",
    ),
    RedactionRule(
        id="builtin.private-key",
        pattern=(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
            r".*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----"
        ),
    ),
)


@dataclass(frozen=True, slots=True)
class _Compiled:
    id: str
    regex: re.Pattern[bytes]
    replacement: bytes


class Redactor:
    """Applies rules to one line at a time and remembers which rule ids matched."""

    def __init__(self, rules: Sequence[RedactionRule]) -> None:
        self._rules = tuple(_compile(rule) for rule in rules)
        self.rule_ids: tuple[str, ...] = tuple(rule.id for rule in rules)

    def __bool__(self) -> bool:
        return bool(self._rules)

    def matches_any(self, block: bytes) -> bool:
        """Cheap pre-check over many lines: most blocks hold no secret at all."""
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


def _compile(rule: RedactionRule) -> _Compiled:
    try:
        regex = re.compile(rule.pattern.encode())
    except re.error as exc:
        raise ConfigError(
            f"redaction rule {rule.id!r}: bad pattern {rule.pattern!r}: {exc}"
        ) from exc
    replacement = rule.replacement.replace("{id}", rule.id).encode()
    return _Compiled(rule.id, regex, replacement)


def _literal(replacement: bytes) -> Callable[[re.Match[bytes]], bytes]:
    # A function replacement: backslashes and group references in it stay literal.
    return lambda _match: replacement
