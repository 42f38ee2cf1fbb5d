"""The command line and settings `agent-gateway run` gives Claude Code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.errors import ConfigError
from gateway.runner.claude_cli import claude_binary, command, merged_settings
from gateway.runner.options import RunOptions

GATEWAY = {
    "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "http", "url": "G"}]}]},
    "allowedHttpHookUrls": ["http://127.0.0.1:1/*"],
    "httpHookAllowedEnvVars": ["T"],
    "disableAllHooks": False,
}


def test_the_bundled_binary_is_found_without_importing_the_sdk() -> None:
    path = Path(claude_binary())
    assert path.name == "claude" and path.is_file()


def test_flags_follow_the_options() -> None:
    cmd = command(RunOptions(
        model="m", max_turns=3, max_budget_usd=0.5, allowed_tools=["Bash", "Read"],
        disallowed_tools=["Write"], permission_mode="plan", resume="-s1", fork_session=True,
        effort="high", extra_args={"autocompact": "200000"},
    ), {"a": 1})
    assert cmd[1:6] == ["-p", "--output-format", "stream-json", "--verbose", "--system-prompt"]
    assert cmd[6] == ""  # claude-agent-sdk's default: an empty system prompt
    pairs = {cmd[i]: cmd[i + 1] for i in range(7, len(cmd) - 1) if cmd[i].startswith("--")}
    assert pairs["--allowedTools"] == "Bash,Read" and pairs["--disallowedTools"] == "Write"
    assert pairs["--max-turns"] == "3" and pairs["--max-budget-usd"] == "0.5"
    assert pairs["--model"] == "m" and pairs["--permission-mode"] == "plan"
    assert pairs["--effort"] == "high" and json.loads(pairs["--settings"]) == {"a": 1}
    # A session id that starts with a dash stays the value of --resume, never a flag.
    assert "--resume=-s1" in cmd and "--fork-session" in cmd
    assert "--autocompact=200000" in cmd and "--include-partial-messages" in cmd
    assert cmd[-2:] == ["--input-format", "stream-json"]


def test_no_settings_no_flag() -> None:
    assert "--settings" not in command(RunOptions(), None)


def test_the_gateways_hooks_come_before_the_callers(tmp_path: Path) -> None:
    theirs = {
        "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "mine"}]}],
                  "Stop": [{"hooks": []}]},
        "allowedHttpHookUrls": ["https://mine/*"],
        "disableAllHooks": True,
        "model": "x",
    }
    (tmp_path / "s.json").write_text("\ufeff" + json.dumps(theirs))  # a BOM, as editors write
    for value in ("s.json", json.dumps(theirs)):
        merged = merged_settings(RunOptions(settings=value, cwd=str(tmp_path)), GATEWAY)
        pre = merged["hooks"]["PreToolUse"]
        assert pre[0]["hooks"][0]["url"] == "G" and pre[1]["hooks"][0]["command"] == "mine"
        assert merged["hooks"]["Stop"] == [{"hooks": []}]
        assert merged["allowedHttpHookUrls"] == ["http://127.0.0.1:1/*", "https://mine/*"]
        assert merged["disableAllHooks"] is False  # the caller's settings cannot turn them off
        assert merged["model"] == "x"


@pytest.mark.parametrize("value", ["[1]", "{bad", "missing.json", '{"hooks": []}'])
def test_unreadable_settings_are_one_line_errors(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match=r"^--settings") as caught:
        merged_settings(RunOptions(settings=value, cwd=str(tmp_path)), GATEWAY)
    assert "\n" not in str(caught.value)


def test_the_policys_sandbox_stands_over_the_callers() -> None:
    """The caller may narrow the sandbox (more denies, fewer hosts), never loosen it."""
    ours = {
        "sandbox": {"enabled": True, "failIfUnavailable": True,
                    "allowUnsandboxedCommands": False, "allowNestedUserNamespaces": False,
                    "filesystem": {"denyRead": ["~/.agent-gateway/cache.key"],
                                   "denyWrite": ["~/.agent-gateway"]},
                    "network": {"allowedDomains": ["*"], "deniedDomains": ["pastebin.com"]}},
        "permissions": {"deny": ["Read(**/.env)"]},
    }
    theirs = {
        "sandbox": {"enabled": False, "excludedCommands": ["cat"],
                    "allowUnsandboxedCommands": True, "allowNestedUserNamespaces": True,
                    "enableWeakerNestedSandbox": True,
                    "filesystem": {"disabled": True, "denyRead": ["~/.kube"],
                                   "allowWrite": ["~/.agent-gateway"]},
                    "network": {"allowedDomains": ["pypi.org"], "allowAllUnixSockets": True}},
        "permissions": {"allow": ["Bash"], "deny": ["Bash(sudo:*)"]},
    }
    merged = merged_settings(RunOptions(settings=json.dumps(theirs)), ours)
    sandbox = merged["sandbox"]
    assert sandbox["enabled"] is True and sandbox["allowUnsandboxedCommands"] is False
    assert sandbox["allowNestedUserNamespaces"] is False
    assert "excludedCommands" not in sandbox
    assert sandbox["enableWeakerNestedSandbox"] is True  # a container's need, documented
    assert sandbox["filesystem"] == {"denyRead": ["~/.agent-gateway/cache.key", "~/.kube"],
                                     "denyWrite": ["~/.agent-gateway"]}
    assert sandbox["network"] == {"allowedDomains": ["pypi.org"],
                                  "deniedDomains": ["pastebin.com"]}
    assert merged["permissions"] == {"allow": ["Bash"],
                                     "deny": ["Read(**/.env)", "Bash(sudo:*)"]}
