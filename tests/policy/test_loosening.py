"""What a new version of a policy file gives up: rules, looser settings, safeguards off."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from gateway.policy.loosening import loosenings
from gateway.policy.model import PolicyFile

BASE = """
version: 1
mode: enforce
default: ask
unparseable: deny
sandbox: required
permissions:
  deny: ["Bash(rm -rf:*)", "Read(**/.env)"]
  ask: ["Bash(git push:*)"]
  allow: ["Bash(npm test:*)"]
rules:
  - id: no-kubectl-delete
    reason: needs a human
    rule: "Bash(kubectl delete:*)"
  - id: watch-curl
    mode: monitor
    rule: "Bash(curl:*)"
limits:
  max_turns: 50
  max_budget_usd: 10
  models: [claude-sonnet-5]
  effort: medium
compaction:
  require_archive: true
  builtin_redaction: true
  redact: [{id: aws, pattern: "AKIA[0-9A-Z]{16}"}]
"""


def spec(text: str) -> PolicyFile:
    return PolicyFile.model_validate(yaml.safe_load(textwrap.dedent(text)))


def edited(**changes: object) -> PolicyFile:
    data = yaml.safe_load(BASE)
    for key, value in changes.items():
        where = data
        *parents, last = key.split(".")
        for part in parents:
            where = where[part]
        if value is None:
            del where[last]
        else:
            where[last] = value
    return PolicyFile.model_validate(data)


def test_the_same_file_and_additions_give_nothing_up() -> None:
    assert loosenings(spec(BASE), spec(BASE)) == []
    tighter = edited(
        **{"permissions.deny": ["Bash(rm -rf:*)", "Read(**/.env)", "Bash(dd:*)"],
           "default": "deny", "limits.max_turns": 20, "limits.models": []}
    )
    assert loosenings(spec(BASE), tighter) == []


def test_renaming_rewording_and_moving_a_rule_give_nothing_up() -> None:
    moved = edited(**{
        "permissions.deny": ["Read(**/.env)"],
        "rules": [
            {"id": "renamed", "reason": "other words", "rule": "Bash(kubectl delete:*)"},
            {"id": "rm", "rule": "Bash(rm -rf:*)"},
            {"id": "watch-curl", "mode": "monitor", "rule": "Bash(curl:*)"},
        ],
    })
    assert loosenings(spec(BASE), moved) == []
    ask_to_deny = edited(**{"permissions.ask": [], "permissions.deny": [
        "Bash(rm -rf:*)", "Read(**/.env)", "Bash(git push:*)"]})
    assert loosenings(spec(BASE), ask_to_deny) == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"permissions.deny": ["Bash(rm -rf:*)"]}, "deny rule 'Read(**/.env)' removed"),
        ({"permissions.ask": None}, "ask rule 'Bash(git push:*)' removed"),
        ({"rules": []}, "deny rule 'no-kubectl-delete' removed"),
        ({"permissions.deny": ["Read(**/.env)"], "permissions.ask": ["Bash(git push:*)",
                                                                     "Bash(rm -rf:*)"]},
         "deny rule 'Bash(rm -rf:*)' loosened"),
        ({"mode": "monitor"}, "mode enforce -> monitor"),
        ({"default": None}, "default ask -> abstain"),
        ({"unparseable": "ask"}, "unparseable deny -> ask"),
        ({"sandbox": None}, "sandbox required -> off"),
        ({"self_protection": False}, "self_protection true -> false"),
        ({"limits.max_turns": 51}, "limits.max_turns 50 -> 51"),
        ({"limits.max_budget_usd": None}, "limits.max_budget_usd 10 -> none"),
        ({"limits.models": ["claude-sonnet-5", "claude-opus-5"]},
         "limits.models adds claude-opus-5"),
        ({"limits": None}, "limits.models no longer limited"),
        ({"limits.effort": "high"}, "limits.effort adds high"),
        ({"compaction.require_archive": False}, "compaction.require_archive true -> false"),
        ({"compaction": None}, "compaction.builtin_redaction true -> false"),
        ({"compaction.redact": []}, "compaction.redact rule 'aws' removed"),
    ],
)
def test_what_a_cut_or_an_edit_gives_up_is_named(changes: dict[str, object],
                                                 expected: str) -> None:
    assert expected in loosenings(spec(BASE), edited(**changes))


def test_a_monitor_rule_or_an_allow_rule_removed_gives_nothing_up() -> None:
    fewer = edited(**{"permissions.allow": [], "rules": [
        {"id": "no-kubectl-delete", "rule": "Bash(kubectl delete:*)"}]})
    assert loosenings(spec(BASE), fewer) == []


def test_a_file_turned_to_monitor_is_said_once() -> None:
    assert loosenings(spec(BASE), edited(mode="monitor")) == ["mode enforce -> monitor"]


def test_a_prefix_of_a_file_gives_up_its_tail() -> None:
    """What an editor's truncate-then-write leaves for a moment."""
    full = textwrap.dedent(BASE)
    cut = full[: full.index("  ask:")]
    assert spec(cut) is not None  # a prefix that validates: the danger
    lost = loosenings(spec(full), spec(cut))
    assert "ask rule 'Bash(git push:*)' removed" in lost
    assert "deny rule 'no-kubectl-delete' removed" in lost
    assert "limits.max_turns 50 -> none" in lost
