"""The command hook as a real process: stdin bytes in, stdout JSON and exit status out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.audit import verify

POLICY = "version: 1\npermissions:\n  deny: ['Bash(rm:*)']\n  allow: ['Bash(ls:*)']\n"
RUN = ("import sys; from gateway.handlers.command import run_pre_tool_use; "
       "sys.exit(run_pre_tool_use(sys.argv[1:], sys.stdin.buffer, sys.stdout, sys.stderr))")


def _hook(tmp_path: Path, stdin: bytes, *policies: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "AGENT_GATEWAY_HOME": str(tmp_path / "home")}
    return subprocess.run([sys.executable, "-c", RUN, *policies], input=stdin,
                          capture_output=True, env=env, timeout=60, check=False)


def _input(command: str) -> bytes:
    return json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": command}, "session_id": "s1",
                       "tool_use_id": "t1", "cwd": "/srv/project"}).encode()


@pytest.fixture
def policy(tmp_path: Path) -> str:
    path = tmp_path / "org.yaml"
    path.write_text(POLICY)
    return str(path)


def test_deny_allow_abstain(tmp_path: Path, policy: str) -> None:
    denied = _hook(tmp_path, _input("cd / && rm -rf x"), policy)
    assert denied.returncode == 0, denied.stderr
    out = json.loads(denied.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "org.yaml:permissions.deny[1]" in out["permissionDecisionReason"]
    allowed = _hook(tmp_path, _input("ls -la"), policy)  # now served from the cache
    assert json.loads(allowed.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
    abstained = _hook(tmp_path, _input("make"), policy)
    assert (abstained.returncode, json.loads(abstained.stdout)) == (0, {})
    audit = tmp_path / "home" / "audit.jsonl"
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [r["decision"] for r in records] == ["deny", "allow", "abstain"]
    assert records[0]["tool_use_id"] == "t1"
    assert verify(audit) is None
    assert list((tmp_path / "home" / "cache").glob("*.json"))
    assert not list((tmp_path / "home" / "cache").glob("*.pickle"))


class _Payload:
    """Unpickling this runs `touch MARKER`: what a planted pickle cache entry would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def _plant(cache: Path, payload: bytes) -> int:
    entries = [p for p in cache.iterdir() if p.is_file()]
    for entry in entries:
        entry.write_bytes(payload)
    return len(entries)


def test_a_planted_cache_entry_neither_runs_nor_changes_a_decision(tmp_path: Path,
                                                                    policy: str) -> None:
    import pickle

    first = _hook(tmp_path, _input("rm -rf x"), policy)
    assert json.loads(first.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    cache = tmp_path / "home" / "cache"
    marker = tmp_path / "ran"
    assert _plant(cache, pickle.dumps(_Payload(marker))) >= 1
    again = _hook(tmp_path, _input("rm -rf x"), policy)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert not marker.exists()


def test_a_forged_json_entry_without_the_key_is_ignored(tmp_path: Path, policy: str) -> None:
    from gateway.policy.cache_format import policy_to_data
    from gateway.policy.compiled import Policy

    _hook(tmp_path, _input("ls"), policy)
    cache = tmp_path / "home" / "cache"
    entry = next(p for p in cache.iterdir() if p.suffix == ".json")
    real = json.loads(json.loads(entry.read_text())["data"])
    permissive = Policy((), real["bundle_hash"])  # same bundle hash, no rules at all
    body = json.dumps(policy_to_data(permissive))
    entry.write_text(json.dumps({"mac": "0" * 64, "data": body}))
    result = _hook(tmp_path, _input("rm -rf x"), policy)
    assert json.loads(result.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    rewritten = json.loads(entry.read_text())
    assert json.loads(rewritten["data"])["layers"], "the forged entry was replaced"


@pytest.mark.parametrize(("stdin", "message"), [
    (b"{not json", "hook input is not JSON"),
    (b'{"tool_input": {}}', "no tool_name"),
])
def test_malformed_input_exits_2(tmp_path: Path, policy: str, stdin: bytes,
                                 message: str) -> None:
    result = _hook(tmp_path, stdin, policy)
    assert result.returncode == 2
    assert result.stdout == b""
    err = result.stderr.decode()
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_missing_policy_exits_2(tmp_path: Path) -> None:
    result = _hook(tmp_path, _input("ls"), str(tmp_path / "nope.yaml"))
    assert result.returncode == 2
    assert "nope.yaml: cannot read policy file" in result.stderr.decode()


def test_invalid_policy_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "org.yaml"
    bad.write_text("version: 1\npermissions:\n  deny: ['Bash(rm']\n")
    result = _hook(tmp_path, _input("ls"), str(bad))
    assert result.returncode == 2
    assert f"{bad}:3: not a permission rule" in result.stderr.decode()


def test_no_policy_exits_2(tmp_path: Path) -> None:
    result = _hook(tmp_path, _input("ls"))
    assert result.returncode == 2
    assert "no policy file given" in result.stderr.decode()


def test_policy_from_the_environment(tmp_path: Path, policy: str) -> None:
    """`agent-gateway hook pre-tool-use` without --policy reads AGENT_GATEWAY_POLICY."""
    env = {**os.environ, "AGENT_GATEWAY_HOME": str(tmp_path / "home"),
           "AGENT_GATEWAY_POLICY": policy}
    result = subprocess.run([sys.executable, "-m", "gateway", "hook", "pre-tool-use"],
                            input=_input("rm -rf x"), capture_output=True, env=env, timeout=60,
                            check=False)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "org.yaml:permissions.deny[1]" in out["permissionDecisionReason"]


def test_cache_hit_does_not_import_pydantic_or_yaml(tmp_path: Path, policy: str) -> None:
    _hook(tmp_path, _input("ls"), policy)  # warm the cache
    probe = RUN.replace("sys.exit(", "rc = (") + (
        "; import sys as s; bad = [m for m in ('pydantic', 'yaml', 'pathspec') "
        "if m in s.modules]; print(bad, file=s.stderr); s.exit(rc if not bad else 9)")
    env = {**os.environ, "AGENT_GATEWAY_HOME": str(tmp_path / "home")}
    result = subprocess.run([sys.executable, "-c", probe, policy], input=_input("ls"),
                            capture_output=True, env=env, timeout=60, check=False)
    assert result.returncode == 0, result.stderr.decode()


@pytest.mark.parametrize(("command", "decision"), [
    ("l\ud800s -la", "abstain"), ("rm -rf \udc80x", "deny"), ("ls \udfff", "allow"),
])
def test_a_lone_surrogate_is_decided_and_recorded(tmp_path: Path, policy: str, command: str,
                                                   decision: str) -> None:
    """JSON may escape a lone surrogate, which UTF-8 cannot hold; bash gets U+FFFD in its
    place. The decision is made and recorded, without a traceback."""
    stdin = _input(command)
    assert b"\\ud" in stdin  # json.dumps escapes it as Claude Code's JSON would
    done = _hook(tmp_path, stdin, policy)
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    output = json.loads(done.stdout).get("hookSpecificOutput", {})
    assert output.get("permissionDecision", "abstain") == decision
    assert verify(tmp_path / "home" / "audit.jsonl") is None
