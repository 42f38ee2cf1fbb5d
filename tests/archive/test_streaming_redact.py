from __future__ import annotations

import hashlib
import io
import json

import pytest
import zstandard

from gateway.archive import streaming
from gateway.archive.redact import BUILTIN_RULES, Redactor, redaction_rules
from gateway.archive.streaming import archive_stream, decompress_to
from gateway.compaction import RedactionRule
from gateway.errors import ArchiveError, ConfigError

SECRETS = {
    "builtin.anthropic-key": "sk-ant-api03-" + "A" * 40,
    "builtin.aws-access-key": "AKIAABCDEFGHIJKLMNOP",
    "builtin.github-token": "ghp_" + "x" * 36,
    "builtin.private-key": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaA\\n-----END OPENSSH PRIVATE KEY-----"
    ),
    "builtin.bearer-token": "Bearer " + "t0k3n." * 6,
}


def unpack(data: bytes) -> bytes:
    out = io.BytesIO()
    decompress_to(io.BytesIO(data), out.write)
    return out.getvalue()


def test_copies_exactly_up_to_the_limit() -> None:
    data = b'{"a":1}\n{"b":2}\n{"c":3'
    dst = io.BytesIO()
    stats = archive_stream(io.BytesIO(data + b"more"), len(data), dst)
    assert unpack(dst.getvalue()) == data
    assert stats.size == len(data) and stats.lines == 3  # the unfinished line counts
    assert stats.sha256 == stats.stored_sha256 == hashlib.sha256(data).hexdigest()
    assert zstandard.get_frame_parameters(dst.getvalue()).content_size == len(data)


def test_file_shorter_than_the_limit_is_an_error() -> None:
    with pytest.raises(ArchiveError, match="ended at byte 3"):
        archive_stream(io.BytesIO(b"abc"), 10, io.BytesIO())


def test_builtin_patterns_redact_and_keep_json_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streaming, "CHUNK", 7)  # force lines across chunk boundaries
    lines = [json.dumps({"text": f"key {value} end"}) for value in SECRETS.values()]
    lines.append(json.dumps({"text": "nothing secret here"}))
    data = ("\n".join(lines) + "\n").encode()
    dst = io.BytesIO()
    stats = archive_stream(io.BytesIO(data), len(data), dst, Redactor(BUILTIN_RULES))
    stored = unpack(dst.getvalue())
    for secret in SECRETS.values():
        assert secret.encode() not in stored
    assert set(stats.redactions) == set(SECRETS)
    assert stats.sha256 == hashlib.sha256(data).hexdigest()
    assert stats.stored_sha256 == hashlib.sha256(stored).hexdigest() != stats.sha256
    assert stats.lines == len(lines) and stored.count(b"\n") == len(lines)
    for line in stored.splitlines():
        json.loads(line)
    assert b"[REDACTED:builtin.aws-access-key]" in stored


def test_custom_rule_replacement_is_literal() -> None:
    rule = RedactionRule(id="acct", pattern=r"acct-\d+", replacement=r"<\1 {id}>")
    data = b"x acct-123 y\nno match\nacct-9\n"
    dst = io.BytesIO()
    stats = archive_stream(io.BytesIO(data), len(data), dst, Redactor([rule]))
    assert unpack(dst.getvalue()) == b"x <\\1 acct> y\nno match\n<\\1 acct>\n"
    assert stats.redactions == ("acct",)


def test_no_match_keeps_bytes_and_records_no_rule() -> None:
    data = b"plain\nlines\n"
    dst = io.BytesIO()
    stats = archive_stream(io.BytesIO(data), len(data), dst, Redactor(BUILTIN_RULES))
    assert unpack(dst.getvalue()) == data and stats.redactions == ()
    assert stats.stored_sha256 == stats.sha256


def test_rule_order_and_bad_pattern() -> None:
    custom = RedactionRule(id="c", pattern="x")
    assert redaction_rules([custom], builtin=False) == (custom,)
    assert redaction_rules([custom], builtin=True)[-1] == custom
    with pytest.raises(ConfigError, match="'bad'"):
        Redactor([RedactionRule(id="bad", pattern="(")])
