from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gateway.cli.main import main
from gateway.cli.serve import ServeArgs, is_loopback, serve_command
from gateway.cli.settings import _sandbox_programs_missing
from gateway.policy import load_policy
from gateway.server.claude_settings import gateway_settings, managed_settings, static_denies

POLICIES = [
    str(Path(__file__).parents[2] / "policies" / f"{n}.yaml") for n in ("org", "team", "project")
]


def test_handlers_block_on_failure_and_send_the_token() -> None:
    settings = gateway_settings("http://gw:8787/", static_denies=["Bash(rm:*)"])
    handler = settings["hooks"]["PreToolUse"][0]["hooks"][0]
    assert handler["onFailure"] == "block"  # on the handler: the matcher's is ignored
    assert "onFailure" not in settings["hooks"]["PreToolUse"][0]
    assert handler["url"] == "http://gw:8787/hooks/PreToolUse"
    assert handler["headers"]["Authorization"] == "Bearer $AGENT_GATEWAY_TOKEN"
    assert settings["httpHookAllowedEnvVars"] == ["AGENT_GATEWAY_TOKEN"]
    assert settings["allowedHttpHookUrls"] == ["http://gw:8787/*"]
    assert settings["env"]["ANTHROPIC_BASE_URL"] == "http://gw:8787"
    assert settings["permissions"]["deny"] == ["Bash(rm:*)"]


def test_static_denies_mirror_enforced_permission_denies() -> None:
    denies = static_denies(load_policy(POLICIES))
    # in Claude Code's syntax: its `/x` is relative to the settings file, the gateway's to
    # the project; its `X:*` prefix reads a `*` in X literally
    assert "Edit(./migrations/**)" in denies and "Edit(/migrations/**)" not in denies
    assert "Bash(dd of=/dev/*)" in denies and "Bash(dd of=/dev/*:*)" not in denies
    assert "Bash(rm -rf:*)" in denies
    assert len(denies) == len(set(denies))


def test_managed_form_disables_bypass() -> None:
    settings = managed_settings("http://gw")
    assert settings["permissions"]["disableBypassPermissionsMode"] == "disable"


def test_settings_command_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(
            [
                "settings",
                "--url",
                "http://127.0.0.1:8787",
                "--token",
                *[arg for p in POLICIES for arg in ("--policy", p)],
            ]
        )
    assert done.value.code == 0
    printed = json.loads(capsys.readouterr().out)
    assert "Edit(./migrations/**)" in printed["permissions"]["deny"]


def test_serve_refuses_open_address_without_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("AGENT_GATEWAY_TOKEN", raising=False)
    monkeypatch.delenv("AGENT_GATEWAY_TOKENS_FILE", raising=False)
    assert serve_command(ServeArgs(POLICIES, "0.0.0.0", 0, "http://x")) == 2
    err = capsys.readouterr().err
    assert "refusing" in err and len(err.strip().splitlines()) == 1
    assert is_loopback("127.0.0.1") and is_loopback("::1") and not is_loopback("10.0.0.1")


@pytest.mark.parametrize(
    ("template", "extra"),
    [
        ("settings.local-gateway.json", ["--url", "http://127.0.0.1:8787", "--token"]),
        ("settings.command-hook.json",
         ["--url", "http://127.0.0.1:8787", "--command-hook", "--token"]),
        (
            "managed-settings.d/50-agent-gateway.json",
            ["--url", "https://agent-gateway.internal.example.com", "--managed", "--token"],
        ),
    ],
)
def test_shipped_templates_are_what_the_generator_prints(
    template: str, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """hooks/ must be regenerated when the generator or the example policies change."""
    from gateway.cli.main import build_parser
    from gateway.cli.settings import run as settings_command

    repo = Path(__file__).resolve().parents[2]
    policies = [f"--policy={repo / 'policies' / n}.yaml" for n in ("org", "team", "project")]
    args = build_parser().parse_args(["settings", *extra, *policies])
    assert settings_command(args) == 0
    printed = json.loads(capsys.readouterr().out)
    shipped = json.loads((repo / "hooks" / template).read_text())
    # The sandbox keeps the gateway's own files on this host from being written (its code,
    # the policy files): where the checkout and the interpreter are differs between hosts.
    for settings in (printed, shipped):
        for key in ("denyRead", "denyWrite"):
            paths = settings["sandbox"]["filesystem"][key]
            settings["sandbox"]["filesystem"][key] = [
                p for p in paths if not _host_path(p, repo, settings is shipped)]
    assert printed == shipped


def _host_path(path: str, repo: Path, shipped: bool) -> bool:
    """A path of the host the settings were generated on: the checkout, site-packages."""
    if "site-packages" in path:
        return True
    if shipped:  # generated in another checkout: its policies/ and gateway/ directories
        return path.startswith("//") and path.endswith(("/policies/org.yaml",
                                                        "/policies/team.yaml",
                                                        "/policies/project.yaml", "/gateway"))
    return path.startswith(f"//{str(repo).lstrip('/')}/")


def test_model_requests_get_the_token_from_a_helper_not_the_file() -> None:
    import subprocess

    settings = gateway_settings("http://gw:8787")
    helper = settings["apiKeyHelper"]
    assert "$AGENT_GATEWAY_TOKEN" in helper
    out = subprocess.run(
        ["/bin/sh", "-c", helper],
        env={"AGENT_GATEWAY_TOKEN": "t-123 with space"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == "t-123 with space"  # exactly the token: no newline, no quoting
    assert "apiKeyHelper" not in gateway_settings("http://gw", with_token=False)
    assert "apiKeyHelper" not in gateway_settings("http://gw", proxy=False)
    assert managed_settings("http://gw")["apiKeyHelper"] == helper


def test_settings_command_says_what_to_export(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["settings", "--url", "http://127.0.0.1:8787", "--token"])
    err = capsys.readouterr().err
    assert "export AGENT_GATEWAY_TOKEN=" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit):
        main(["settings", "--url", "http://127.0.0.1:8787", "--no-token"])
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"runs_roots": ["/nonexistent/runs"]}, "--runs-root /nonexistent/runs is not a directory"),
        ({"decision_budget_s": 0.0}, "--decision-budget must be a positive number"),
    ],
)
def test_serve_options_are_checked_before_starting(
    extra: dict[str, object], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ServeArgs(POLICIES, "127.0.0.1", 0, "http://x", **extra)  # type: ignore[arg-type]
    assert serve_command(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_serve_help_names_the_new_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    for option in ("--runs-root", "--redis-url", "--decision-budget"):
        assert option in out


def test_a_sandbox_policy_turns_the_sandbox_on_and_tells_the_hooks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "org.yaml"
    policy.write_text("version: 1\nsandbox: required\npermissions:\n"
                      "  deny: ['Read(**/.env)', 'Edit(config/**)']\n")
    fingerprint = load_policy([str(policy)]).sandbox_fingerprint
    for extra in ([], ["--managed"], ["--command-hook"]):
        with pytest.raises(SystemExit) as done:
            main(["settings", "--url", "http://127.0.0.1:8787", "--policy", str(policy),
                  *extra])
        assert done.value.code == 0
        captured = capsys.readouterr()
        printed = json.loads(captured.out)
        # named only where this machine lacks what the sandbox needs
        assert ("bubblewrap" in captured.err) is bool(_sandbox_programs_missing())
        sandbox = printed["sandbox"]
        assert sandbox["enabled"] and sandbox["failIfUnavailable"]
        assert sandbox["allowUnsandboxedCommands"] is False
        assert "Read(**/.env)" in printed["permissions"]["deny"]
        assert "Edit(./config/**)" in printed["permissions"]["deny"]
        assert "~/.claude/settings.json" in sandbox["filesystem"]["denyWrite"]
        handler = printed["hooks"]["PreToolUse"][0]["hooks"][0]
        where = handler.get("url") or handler.get("command")
        assert where.endswith(f"?sandbox={fingerprint}" if "url" in handler
                              else f" --sandbox {fingerprint}")
        for event, matchers in printed["hooks"].items():
            if event != "PreToolUse":
                assert "sandbox" not in json.dumps(matchers)


def test_without_the_key_no_sandbox_is_written(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "org.yaml"
    policy.write_text("version: 1\npermissions:\n  deny: ['Read(**/.env)']\n")
    with pytest.raises(SystemExit):
        main(["settings", "--url", "http://127.0.0.1:8787", "--policy", str(policy)])
    printed = json.loads(capsys.readouterr().out)
    assert "sandbox" not in printed
    assert printed["hooks"]["PreToolUse"][0]["hooks"][0]["url"].endswith("/hooks/PreToolUse")


def _settings(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(["settings", *args])
    captured = capsys.readouterr()
    return int(done.value.code or 0), captured.out, captured.err


def test_command_hooks_are_written_for_every_event_the_gateway_needs(
    capsys: pytest.CaptureFixture[str]
) -> None:
    """Relayed: a blocking event the gateway cannot answer blocks; an observed one does not
    (exit 2 at Stop would keep the agent going)."""
    code, out, _ = _settings(capsys, "--url", "http://gw:8787", "--command-hook", "--token")
    assert code == 0
    hooks = json.loads(out)["hooks"]
    assert set(hooks) == {"PreToolUse", "PreCompact", "PostToolUse", "PostToolUseFailure",
                          "PostCompact", "SessionStart", "SessionEnd", "SubagentStart",
                          "SubagentStop", "Stop", "StopFailure", "UserPromptSubmit"}
    for event, (matcher,) in hooks.items():
        (handler,) = matcher["hooks"]
        assert handler["command"].endswith(" --remote http://gw:8787"), handler
        assert ("onFailure" in handler) is (event in ("PreToolUse", "PreCompact")), event
    assert hooks["Stop"][0]["hooks"][0]["command"].startswith("agent-gateway hook stop ")


def test_local_command_hooks_need_a_policy_and_take_the_export_settings_along(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    code, out, err = _settings(capsys, "--command-hook")
    assert code == 2 and not out and err.count("\n") == 1 and "--policy" in err
    policy = tmp_path / "my org.yaml"
    policy.write_text("version: 1\npermissions:\n  deny: ['Read(**/.env)']\n")
    for name in [k for k in os.environ if k.startswith("OTEL_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer s3cret")
    code, out, err = _settings(capsys, "--command-hook", "--policy", str(policy))
    assert code == 0, err
    settings = json.loads(out)
    command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert command == f"agent-gateway hook stop --policy '{policy}'"  # quoted for the shell
    assert settings["env"] == {
        "AGENT_GATEWAY_OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}
    assert "s3cret" not in out and "OTEL_EXPORTER_OTLP_HEADERS is not written" in err
    assert "Read(**/.env)" in settings["permissions"]["deny"]  # the floor, as ever
    assert "apiKeyHelper" not in settings


def test_the_sandbox_warning_names_what_this_machine_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = tmp_path / "org.yaml"
    policy.write_text("version: 1\nsandbox: required\n")
    monkeypatch.setattr("shutil.which", lambda name: None if name == "socat" else "/x")
    code, _, err = _settings(capsys, "--url", "http://gw", "--token", "--policy", str(policy))
    assert code == 0 and "this machine has no socat" in err, err
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/" + name)
    code, _, err = _settings(capsys, "--url", "http://gw", "--token", "--policy", str(policy))
    assert code == 0 and "bubblewrap" not in err, err
