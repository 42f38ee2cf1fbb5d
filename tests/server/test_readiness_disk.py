"""Readiness follows the audit log for real: `serve` on a home that is a real small
filesystem says not ready (503) while the log cannot be appended (the disk full, the home
read-only) and ready again once it can, and the log it kept verifies. Before, /readyz said
200 through a whole disk-full run: its check created an empty file, which a full disk takes."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from gateway.audit import verify_log
from tests.server.processes import ServeProcess
from tests.small_fs import fill, remount, small_tmpfs

POLICY = "version: 1\npermissions:\n  deny: ['Bash(rm:*)']\n  allow: ['Bash(echo:*)']\n"


def get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def decide(url: str, command: str, tool_use_id: str) -> dict[str, Any]:
    body = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "session_id": "s1",
            "tool_use_id": tool_use_id, "tool_input": {"command": command}, "cwd": "/tmp"}
    request = urllib.request.Request(url + "/hooks/PreToolUse", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(json.loads(response.read()))


def test_readyz_follows_a_full_disk_and_a_read_only_home(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    with small_tmpfs(tmp_path / "gw-home", "1m") as home:
        env = {**os.environ, "AGENT_GATEWAY_HOME": str(home)}
        with ServeProcess([str(policy)], "http://127.0.0.1:9", env,
                          log=tmp_path / "serve.log") as gateway:
            assert get(gateway.url + "/readyz")[0] == 200
            decide(gateway.url, "echo one", "t1")

            filler = fill(home)
            status, body = get(gateway.url + "/readyz")
            assert status == 503, body
            assert any("audit log" in p and "No space left" in p for p in body["problems"])
            # A decision now is recorded (the log's last page may still take a record) or
            # denied for want of its record, never answered unrecorded.
            full = decide(gateway.url, "echo full", "t-full")["hookSpecificOutput"]
            recorded = full["permissionDecision"] == "allow"
            if not recorded:
                assert "audit log" in full["permissionDecisionReason"], full

            filler.unlink()
            assert get(gateway.url + "/readyz") == (200, {"ready": True, "problems": [],
                                                          "warnings": []})
            decide(gateway.url, "echo two", "t2")

            remount(home, "ro")
            try:
                status, body = get(gateway.url + "/readyz")
                assert status == 503, body
                assert any("Read-only" in p for p in body["problems"])
            finally:
                remount(home, "rw")
            assert get(gateway.url + "/readyz")[0] == 200
            decide(gateway.url, "echo three", "t3")
        report = verify_log(home / "audit.jsonl")
        assert report.finding is None, report.finding
        decided = [r["tool_use_id"] for r in report.records if r.get("tool") == "Bash"]
        assert decided == ["t1", *(["t-full"] if recorded else []), "t2", "t3"]
