"""Where rules hold, as `policy check` says it; lifting a built-in credential store by name;
variables a policy withholds."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gateway.errors import PolicyError
from gateway.policy import decide, load_policy
from gateway.policy.builtin import Protected
from gateway.policy.commands import policy_check
from gateway.policy.sandbox import compile_sandbox, with_hook_hosts
from gateway.policy.withheld_env import BUILTIN_WITHHELD, withheld_names
from gateway.types import ToolCall


def _write(tmp_path: Path, text: str, name: str = "org.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_check_says_where_a_floating_read_deny_holds_and_what_command_rules_are(
        tmp_path: Path) -> None:
    org = _write(tmp_path, "version: 1\nsandbox: required\npermissions:\n  deny:\n"
                 "    - Read(**/.env)\n    - Read(~/.aws/**)\n    - Bash(rm -rf:*)\n")
    out, err = io.StringIO(), io.StringIO()
    assert policy_check([str(org)], out=out, err=err) == 0
    lines = err.getvalue().splitlines() + out.getvalue().splitlines()
    assert any(f"{org}:5: note: Read(**/.env) is held by the OS sandbox under the session's "
               "directory only" in line for line in lines), lines
    assert not any("~/.aws" in line for line in lines)
    assert any("1 Bash command rule(s) are guards against mistakes" in line for line in lines)


def test_the_org_file_lifts_a_credential_store_by_name(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".npmrc").parent.mkdir(parents=True)
    call = ToolCall("Read", {"file_path": str(home / ".npmrc")}, cwd=str(tmp_path),
                    environ={"HOME": str(home)})
    base = "version: 1\ndefault: allow\npermissions:\n  allow: [Read]\n"
    guarded = load_policy([str(_write(tmp_path, base))], Protected(str(tmp_path / "gw")))
    decision = decide(guarded, call)
    assert (decision.kind, decision.rule_id) == ("deny", "builtin:credential-store:npm")
    lifted = load_policy([str(_write(tmp_path, base + "lift: [builtin:credential-store:npm]\n",
                                     "lifted.yaml"))], Protected(str(tmp_path / "gw")))
    assert decide(lifted, call).kind == "allow"
    pypirc = ToolCall("Read", {"file_path": str(home / ".pypirc")}, cwd=str(tmp_path),
                      environ={"HOME": str(home)})
    assert decide(lifted, pypirc).kind == "deny"  # only the store named


@pytest.mark.parametrize(("text", "message"), [
    ("lift: [builtin:gateway-state]\n", "is not a built-in credential-store rule"),
    ("environment:\n  withhold: ['DEPLOY KEY']\n", "is not a variable name or pattern"),
])
def test_bad_lifts_and_names_are_errors_at_their_line(tmp_path: Path, text: str,
                                                      message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        load_policy([str(_write(tmp_path, "version: 1\n" + text))])


def test_only_the_org_file_may_lift(tmp_path: Path) -> None:
    org = _write(tmp_path, "version: 1\n")
    team = _write(tmp_path, "version: 1\nlift: [builtin:credential-store:npm]\n", "team.yaml")
    with pytest.raises(PolicyError, match="only be set in the org"):
        load_policy([str(org), str(team)])


def test_withheld_variables_reach_the_sandbox(tmp_path: Path) -> None:
    policy = load_policy([str(_write(tmp_path, "version: 1\nsandbox: required\nenvironment:\n"
                                     "  withhold: ['DEPLOY_*', VAULT_ADDR]\n"))])
    names = withheld_names(policy.withheld_env, {"DEPLOY_KEY": "x", "PATH": "/bin"})
    assert names[:len(BUILTIN_WITHHELD)] == BUILTIN_WITHHELD
    assert {"DEPLOY_KEY", "VAULT_ADDR"} <= set(names) and "PATH" not in names
    settings = compile_sandbox(policy.layers, "/", names).settings()
    assert {"name": "ANTHROPIC_API_KEY", "mode": "deny"} in settings["sandbox"]["credentials"][
        "envVars"]
    # without an environment a pattern names nothing
    assert "DEPLOY_KEY" not in withheld_names(policy.withheld_env)


def test_a_restricted_network_lists_the_hooks_host_and_port() -> None:
    settings = {"hooks": {"PreToolUse": [{"hooks": [
        {"type": "http", "url": "http://127.0.0.1:4711/hooks/PreToolUse?sandbox=ab"}]}]},
        "sandbox": {"network": {"allowedDomains": ["pypi.org"]}}}
    assert with_hook_hosts(settings)["sandbox"]["network"]["allowedDomains"] == [
        "pypi.org", "127.0.0.1:4711"]
    open_network = {**settings, "sandbox": {"network": {"allowedDomains": ["*"]}}}
    assert with_hook_hosts(open_network) == open_network
