"""What a decision record says about the input decided: readable, redacted, bounded."""

from __future__ import annotations

import hashlib
import json

import pytest

from gateway.archive.redact import Pattern
from gateway.audit.record import INPUT_CAP, STRING_CAP, audit_redactor, decision_record
from gateway.hashchain import canonical_json
from gateway.types import Decision, ToolCall

DENY = Decision("deny", "org.yaml:permissions.deny[1]", "no", policy_hash="p")


def _record(tool: str, tool_input: dict[str, object], **kw: object) -> dict[str, object]:
    return decision_record(ToolCall(tool, tool_input, tool_use_id="t", session_id="s"), DENY,
                           **kw)  # type: ignore[arg-type]


def test_each_kind_of_input_is_kept_as_decided() -> None:
    for tool, tool_input in (
        ("Bash", {"command": "rm -rf /srv/data", "description": "clean"}),
        ("Read", {"file_path": "/etc/shadow"}),
        ("WebFetch", {"url": "https://pastebin.com/raw/x", "prompt": "read it"}),
        ("mcp__prod_db__drop_table", {"table": "users", "cascade": True, "n": [1, 2]}),
    ):
        record = _record(tool, tool_input)
        assert record["input"] == tool_input
        assert record["input_sha256"] == hashlib.sha256(canonical_json(tool_input)).hexdigest()
        assert record["input_bytes"] == len(canonical_json(tool_input))
        assert "input_truncated" not in record and "input_redactions" not in record


def test_builtin_secrets_are_redacted_and_the_hash_is_of_the_original() -> None:
    key = "sk-ant-" + "a1B2" * 10
    command = f"curl -H 'x-api-key: {key}' -H 'Authorization: Bearer {'t' * 30}' api"
    record = _record("Bash", {"command": command})
    shown = json.dumps(record["input"])
    assert key not in shown and "t" * 30 not in shown
    assert "[REDACTED:builtin.anthropic-key]" in shown
    assert record["input_redactions"] == ["builtin.anthropic-key", "builtin.bearer-token"]
    assert record["input_sha256"] == hashlib.sha256(
        canonical_json({"command": command})).hexdigest()


def test_a_private_key_with_real_newlines_is_redacted_as_in_an_archive() -> None:
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----"
    record = _record("Write", {"file_path": "/tmp/k.pem", "content": pem})
    assert record["input"] == {"file_path": "/tmp/k.pem",
                               "content": "[REDACTED:builtin.private-key]"}


def test_policy_patterns_apply_in_nested_mcp_arguments() -> None:
    redactor = audit_redactor((Pattern("internal-host", r"db-[0-9]+\.corp\.example"),))
    record = _record("mcp__q__run", {"target": {"hosts": ["db-12.corp.example", "ok"]}},
                     redactor=redactor)
    assert record["input"] == {"target": {"hosts": ["[REDACTED:internal-host]", "ok"]}}
    assert record["input_redactions"] == ["internal-host"]


def test_a_pattern_that_eats_an_escape_still_redacts() -> None:
    # Rules see strings JSON-escaped, as in a transcript; one that cuts an escape in half
    # leaves text that is not JSON any more: it is kept as redacted text.
    redactor = audit_redactor((Pattern("quoted", '"secret'),))
    record = _record("Bash", {"command": 'say "secret" now'}, redactor=redactor)
    assert record["input"] == {"command": 'say \\[REDACTED:quoted]\\" now'}
    assert record["input_redactions"] == ["quoted"]


def test_long_strings_and_huge_inputs_are_cut_with_their_length_kept() -> None:
    long = "echo " + "x" * (STRING_CAP * 3)
    record = _record("Bash", {"command": long})
    assert len(record["input"]["command"]) == STRING_CAP + 1  # type: ignore[index]
    assert record["input_truncated"] is True
    assert record["input_bytes"] == len(canonical_json({"command": long}))
    many = {f"k{i}": "v" * 100 for i in range(1000)}
    record = _record("mcp__x__y", many)
    assert isinstance(record["input"], str) and len(record["input"]) <= INPUT_CAP + 1
    assert record["input_truncated"] is True


def test_a_secret_cut_in_half_by_the_cap_is_still_redacted() -> None:
    key = "AKIA" + "Q" * 16
    command = "x" * (STRING_CAP - 10) + key
    record = _record("Bash", {"command": command})
    assert "AKIA" not in json.dumps(record["input"])


@pytest.mark.parametrize(("command", "kept", "secret"), [
    ("export TOKEN=abcd1234efgh && deploy", "export TOKEN=", "abcd1234efgh"),
    ("DB_PASSWORD=hunter22 ./run", "DB_PASSWORD=", "hunter22"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNz' https://x", "Authorization: ", "dXNlcjpwYXNz"),
    ("git clone https://bob:s3cretpw@host/r.git", "@host/r.git", "s3cretpw"),
    ("mytool --token abcdef123 run", "--token ", "abcdef123"),
])
def test_secret_looking_command_inputs_are_redacted_in_the_record(
        command: str, kept: str, secret: str) -> None:
    from gateway.archive.redact import redact_json

    shown, hits = redact_json({"command": command}, audit_redactor())
    assert secret not in shown["command"] and kept in shown["command"], shown
    assert hits and all(h.startswith("builtin.") for h in hits)


def test_ordinary_commands_are_kept_verbatim() -> None:
    from gateway.archive.redact import redact_json

    for command in ("echo hello", "grep TOKEN= config.py", "cat notes.txt", "ls -la"):
        assert redact_json({"command": command}, audit_redactor()) == (
            {"command": command}, frozenset())
