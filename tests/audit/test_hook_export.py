"""The command hook as a real process: its decision's log record when OTEL_LOGS_EXPORTER asks,
no OpenTelemetry import when it does not; the key and the policy's redaction rules apply."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gateway.audit import verify_log
from gateway.integrity.keys import parse_keys
from tests.otlp_receiver import OtlpReceiver

POLICY = """\
version: 1
permissions:
  deny: ['Bash(rm:*)']
compaction:
  redact:
    - {id: ticket, pattern: "TICKET-[0-9]+"}
"""
RUN = ("import sys; from gateway.cli.main import main; "
       "import atexit; atexit.register(lambda: print("
       "'OTEL' if any(m.startswith('opentelemetry') for m in sys.modules) else 'none', "
       "file=sys.stderr)); main(['hook', 'pre-tool-use', '--policy', sys.argv[1]])")
KEY = "h" * 48


def _hook(tmp_path: Path, env: dict[str, str], command: str) -> subprocess.CompletedProcess[str]:
    policy = tmp_path / "org.yaml"
    policy.write_text(POLICY)
    stdin = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                        "tool_input": {"command": command}, "session_id": "s1",
                        "tool_use_id": "t1"})
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
            "AGENT_GATEWAY_HOME": str(tmp_path / "home"), **env}
    return subprocess.run([sys.executable, "-c", RUN, str(policy)], input=stdin, text=True,
                          capture_output=True, env=full, timeout=60, check=False)


def test_one_record_per_call_when_asked(tmp_path: Path) -> None:
    key = tmp_path / "audit.key"
    key.write_text(KEY)
    with OtlpReceiver() as receiver:
        out = _hook(tmp_path, {"OTEL_LOGS_EXPORTER": "otlp",
                               "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
                               "AGENT_GATEWAY_AUDIT_KEY_FILE": str(key)},
                    "rm -rf TICKET-4411")
        assert out.returncode == 0, out.stderr
        assert out.stderr == "OTEL\n"  # nothing else: Claude Code shows a hook's stderr
        # The hook exports synchronously: the record is there when the process has exited.
        (log,) = receiver.logs
    record = json.loads(log["body"])
    assert record["decision"] == "deny" and record["input"] == {
        "command": "rm -rf [REDACTED:ticket]"}
    assert record["input_redactions"] == ["ticket"] and len(record["mac"]) == 64
    assert log["attributes"]["agent_gateway.audit.hash"] == record["hash"]
    audit = tmp_path / "home" / "audit.jsonl"
    assert verify_log(audit, keys=parse_keys(KEY, "k")).finding is None


def test_no_export_and_no_sdk_import_unless_asked(tmp_path: Path) -> None:
    with OtlpReceiver() as receiver:
        out = _hook(tmp_path, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}, "rm x")
        assert out.returncode == 0, out.stderr
        assert out.stderr.strip().endswith("none")
        assert receiver.logs == []


def test_a_bad_exporter_setting_blocks_before_recording(tmp_path: Path) -> None:
    out = _hook(tmp_path, {"OTEL_LOGS_EXPORTER": "kafka"}, "ls")
    assert out.returncode == 2
    assert "OTEL_LOGS_EXPORTER: unsupported exporter 'kafka'" in out.stderr
    assert not (tmp_path / "home" / "audit.jsonl").exists()


def test_a_bad_key_file_blocks(tmp_path: Path) -> None:
    out = _hook(tmp_path, {"AGENT_GATEWAY_AUDIT_KEY_FILE": str(tmp_path / "nope.key")}, "ls")
    assert out.returncode == 2 and "cannot read the key file" in out.stderr
