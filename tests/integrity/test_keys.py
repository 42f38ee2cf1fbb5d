"""The key file: one secret per line, the first signs, all verify; refused where it leaks."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.audit import append_record, verify_log
from gateway.errors import ConfigError
from gateway.hashchain import GENESIS
from gateway.integrity.keys import keys_from_env, load_keys, parse_keys, sealed_link

OLD, NEW = "o" * 40, "n" * 40


def test_first_key_signs_every_key_verifies() -> None:
    old = parse_keys(OLD, "f")
    rotated = parse_keys(f"# rotated in May\n{NEW}\n\n{OLD}\n", "f")
    record = sealed_link({"x": 1}, GENESIS, old)
    assert record["key_id"] == old.signing.id and len(record["mac"]) == 64
    assert rotated.signing.id != old.signing.id
    assert rotated.check(record) is None
    assert parse_keys(NEW, "f").check(record) == (
        f"MAC made with key {old.signing.id}, which is not in f"
    )


def test_a_mac_does_not_survive_an_edit_or_a_swapped_key_id() -> None:
    keys = parse_keys(OLD, "f")
    record = sealed_link({"decision": "deny"}, GENESIS, keys)
    edited = {**record, "decision": "allow"}
    assert keys.check(edited) == f"MAC does not match its contents (key {keys.signing.id})"
    assert keys.check({k: v for k, v in record.items() if k != "mac"}) is not None


def test_bad_key_files_are_one_line_errors(tmp_path: Path) -> None:
    short = tmp_path / "short.key"
    short.write_text("too-short\n")
    with pytest.raises(ConfigError, match=r"short.key:1: key too short \(9 characters"):
        load_keys(short, tmp_path / "home")
    empty = tmp_path / "empty.key"
    empty.write_text("# nothing\n")
    with pytest.raises(ConfigError, match="no key in the file"):
        load_keys(empty, tmp_path / "home")
    with pytest.raises(ConfigError, match="cannot read the key file"):
        load_keys(tmp_path / "absent.key", tmp_path / "home")


def test_a_key_inside_the_gateway_home_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    inside = home / "audit.key"
    inside.write_text(OLD)
    with pytest.raises(ConfigError, match="inside AGENT_GATEWAY_HOME"):
        load_keys(inside, home)


def test_keys_from_env_follow_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gateway.integrity.keys.RECHECK_S", 0.0)  # look at every call
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(tmp_path / "home"))
    assert keys_from_env() is None
    key = tmp_path / "k"
    key.write_text(OLD)
    monkeypatch.setenv("AGENT_GATEWAY_AUDIT_KEY_FILE", str(key))
    first = keys_from_env()
    assert first is not None and first.signing.id == parse_keys(OLD, "").signing.id
    key.write_text(f"{NEW}\n{OLD}\n")
    second = keys_from_env()
    assert second is not None and second.signing.id == parse_keys(NEW, "").signing.id


def test_rotation_keeps_an_old_log_verifiable(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    for n in range(3):
        append_record({"n": n}, log, keys=parse_keys(OLD, "f"))
    rotated = parse_keys(f"{NEW}\n{OLD}\n", "f")
    for n in range(3, 5):
        append_record({"n": n}, log, keys=rotated)
    assert verify_log(log, keys=rotated).finding is None
    finding = verify_log(log, keys=parse_keys(NEW, "f")).finding
    assert finding is not None and finding.position == 1 and "not in f" in finding.message


def test_a_bad_key_file_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AGENT_GATEWAY_AUDIT_KEY_FILE", str(tmp_path / "missing.key"))
    log = tmp_path / "audit.jsonl"
    with pytest.raises(ConfigError):
        append_record({"n": 1}, log)
    assert not log.exists()
