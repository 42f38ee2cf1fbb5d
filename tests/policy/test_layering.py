"""A lower file can only tighten; attempts to loosen are errors at the offending line."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gateway.errors import PolicyError
from gateway.policy import Policy, decide, load_policy

from .conftest import WritePolicy, bash, tool

ORG = """
version: 1
default: ask
permissions:
  deny: ['Bash(rm:*)']
  ask: ['Bash(git push:*)']
limits:
  max_turns: 50
  max_budget_usd: 10
  models: [opus, sonnet]
  effort: high
compaction:
  require_archive: true
"""


def test_team_allow_cannot_lift_org_deny_or_ask(policy_from: Callable[..., Policy]) -> None:
    team = "version: 1\npermissions:\n  allow: ['Bash(rm:*)', 'Bash(git push:*)', 'Bash(make)']\n"
    policy = policy_from(ORG, team)
    assert decide(policy, bash("rm x")).kind == "deny"
    assert decide(policy, bash("git push")).kind == "ask"
    # org's default (ask) still applies to what only the team allows
    assert decide(policy, bash("make")).kind == "ask"


def test_team_adds_denies(policy_from: Callable[..., Policy]) -> None:
    policy = policy_from(ORG, "version: 1\npermissions:\n  deny: ['Read(**/*.key)']\n")
    decision = decide(policy, tool("Read", file_path="/srv/project/a.key"))
    assert (decision.kind, decision.rule_id) == ("deny", "team.yaml:permissions.deny[1]")


def test_limits_combine_to_the_lowest(policy_from: Callable[..., Policy]) -> None:
    team = "version: 1\nlimits: {max_turns: 20, models: [sonnet], effort: [low, medium]}\n"
    limits = policy_from(ORG, team).limits
    assert limits.max_turns == 20
    assert limits.max_budget_usd == 10
    assert limits.models == ("sonnet",)
    assert limits.effort == ("low", "medium")
    assert not limits.allows_model("opus")


@pytest.mark.parametrize(("team", "line", "message"), [
    ("version: 1\nlimits:\n  max_turns: 80\n", 3, "max_turns 80 raises the limit 50"),
    ("version: 1\nlimits:\n  max_budget_usd: 11\n", 3, "max_budget_usd 11.0 raises"),
    ("version: 1\nlimits:\n  models: [haiku]\n", 3, "models ['haiku'] are not allowed"),
    ("version: 1\nlimits:\n  effort: max\n", 3, "effort ['xhigh', 'max'] is not allowed"),
    ("version: 1\ndefault: allow\n", 2, "default 'allow' is looser than the default"),
    ("version: 1\ncompaction:\n  require_archive: false\n", 3,
     "compaction require_archive cannot be turned off"),
])
def test_loosening_is_an_error(write_policy: WritePolicy, team: str, line: int,
                               message: str) -> None:
    org = write_policy(ORG, "org.yaml")
    team_path = write_policy(team, "team.yaml")
    with pytest.raises(PolicyError) as caught:
        load_policy([org, team_path])
    assert caught.value.path == team_path
    assert caught.value.line == line
    assert str(caught.value).startswith(f"{team_path}:{line}: {message}")


def test_unparseable_cannot_loosen(write_policy: WritePolicy) -> None:
    org = write_policy("version: 1\nunparseable: deny\n", "org.yaml")
    team = write_policy("version: 1\nunparseable: ask\n", "team.yaml")
    with pytest.raises(PolicyError, match=r"team.yaml:2: unparseable 'ask' loosens"):
        load_policy([org, team])


def test_bundle_hash_identifies_the_files_in_order(write_policy: WritePolicy) -> None:
    org = write_policy(ORG, "org.yaml")
    team = write_policy("version: 1\n", "team.yaml")
    assert load_policy([org, team]).bundle_hash == load_policy([org, team]).bundle_hash
    assert load_policy([org]).bundle_hash != load_policy([org, team]).bundle_hash


@pytest.mark.parametrize("key", ["require_archive", "archive"])
def test_a_lower_file_cannot_turn_off_a_safeguard_that_is_on_by_default(
    write_policy: WritePolicy, key: str
) -> None:
    org = write_policy("version: 1\n", "org.yaml")
    team = write_policy(f"version: 1\ncompaction:\n  {key}: false\n", "team.yaml")
    with pytest.raises(PolicyError) as caught:
        load_policy([org, team])
    assert (caught.value.path, caught.value.line) == (team, 3)
    assert f"compaction {key} cannot be turned off" in str(caught.value)


def test_the_org_file_may_turn_require_archive_off(write_policy: WritePolicy) -> None:
    org = write_policy("version: 1\ncompaction:\n  require_archive: false\n", "org.yaml")
    team = write_policy("version: 1\ncompaction:\n  require_archive: false\n", "team.yaml")
    assert load_policy([org, team]).compaction_settings().require_archive is False
    assert load_policy([write_policy("version: 1\n", "o.yaml")]).compaction_settings(
    ).require_archive is True
