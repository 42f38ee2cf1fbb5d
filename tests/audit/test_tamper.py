"""Each way of hiding a decision from the audit log, detected by `audit verify` with the first
bad position named; and, stated as tests, what a writer with everything local still gets away
with (only the off-host copy catches that: see test_against.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gateway.audit import checkpoint_path, verify_log
from gateway.hashchain import link
from gateway.integrity.keys import KeySet
from tests.audit.tamper import KEY, fill, forge_checkpoint, rechain, records, write

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Attack:
    name: str
    size: int
    keyed: bool
    tamper: Callable[[Path], None]
    position: int
    says: str


def _drop_last(n: int) -> Callable[[Path], None]:
    def tamper(path: Path) -> None:
        write(path, records(path)[:-n])

    return tamper


def _empty(path: Path) -> None:
    path.write_text("")


def _allow_everything(path: Path) -> None:
    items = records(path)
    for record in items:
        record["decision"] = "allow"
        record.pop("mac", None)
    items = rechain(items)
    write(path, items)
    forge_checkpoint(path, items)


def _append_forged(path: Path) -> None:
    items = records(path)
    forged = {k: v for k, v in items[-1].items() if k not in ("hash", "prev_hash", "mac")}
    forged.update(seq=len(items) + 1, decision="allow", tool_use_id="forged")
    items.append(link(forged, items[-1]["hash"]))
    write(path, items)


ATTACKS = [
    Attack("delete the last record", 20, False, _drop_last(1), 20, "missing"),
    Attack("delete the last 50", 80, False, _drop_last(50), 31, "missing"),
    Attack("empty the file", 12, False, _empty, 1, "missing"),
    Attack("delete the last record, keyed", 20, True, _drop_last(1), 20, "missing"),
    Attack("rewrite every record with a plain chain, keyed", 15, True, _allow_everything, 1,
           "no MAC"),
    Attack("append a forged record", 10, False, _append_forged, 11, "not covered"),
    Attack("append a forged record, keyed", 10, True, _append_forged, 11, "no MAC"),
]


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "secrets" / "audit.key"
    path.parent.mkdir()
    path.write_text("k" * 40 + "\n")
    return path


def _keys(attack: Attack) -> KeySet | None:
    return KEY if attack.keyed else None


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_detected_by_verify(tmp_path: Path, attack: Attack) -> None:
    log = tmp_path / "audit.jsonl"
    fill(log, attack.size, _keys(attack))
    assert verify_log(log, keys=_keys(attack)).finding is None
    attack.tamper(log)
    finding = verify_log(log, keys=_keys(attack)).finding
    assert finding is not None, attack.name
    assert finding.position == attack.position, finding.message
    assert finding.message.startswith(f"record {attack.position}: ")
    assert attack.says in finding.message


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_detected_through_the_cli(tmp_path: Path, attack: Attack, key_file: Path) -> None:
    log = tmp_path / "home" / "audit.jsonl"
    fill(log, attack.size, _keys(attack))
    env = {**os.environ, "AGENT_GATEWAY_HOME": str(log.parent), "PYTHONPATH": str(ROOT)}
    if attack.keyed:
        env["AGENT_GATEWAY_AUDIT_KEY_FILE"] = str(key_file)
    ok = _cli(env, "audit", "verify")
    assert ok.returncode == 0 and "OK" in ok.stdout, ok.stderr
    attack.tamper(log)
    out = _cli(env, "audit", "verify")
    assert out.returncode == 1
    failed = [line for line in out.stderr.splitlines() if "FAILED" in line]
    assert len(failed) == 1, out.stderr
    assert f"FAILED at record {attack.position}: " in failed[0] and attack.says in failed[0]


def test_decisions_keep_being_recorded_after_a_cut_and_the_cut_stays_visible(
    tmp_path: Path,
) -> None:
    log = tmp_path / "audit.jsonl"
    fill(log, 30)
    write(log, records(log)[:10])
    fill(log, 5, start=30)  # the gateway goes on deciding (fresh processes, no memory)
    finding = verify_log(log).finding
    assert finding is not None and finding.position == 11
    assert "held 10 records where checkpoint #30 counted 30" in finding.message


def test_replaying_an_older_checkpoint_over_a_truncated_log(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    fill(log, 10, KEY)
    saved = checkpoint_path(log).read_bytes()  # a genuine, MACed checkpoint
    fill(log, 10, KEY, start=10)
    write(log, records(log)[:15])
    checkpoint_path(log).write_bytes(saved)
    finding = verify_log(log, keys=KEY).finding
    assert finding is not None and finding.position == 11
    assert "not covered by checkpoint #10" in finding.message


def test_exact_replay_is_caught_by_a_writer_that_remembers(tmp_path: Path) -> None:
    """Cut back exactly to a saved checkpoint: the log and checkpoint agree again, so only
    something outside them can tell; a long-running writer (the service) is such a thing."""
    log = tmp_path / "audit.jsonl"
    fill(log, 10, KEY)
    saved_log, saved_cp = log.read_bytes(), checkpoint_path(log).read_bytes()
    fill(log, 10, KEY, start=10)  # this process wrote checkpoint #20
    log.write_bytes(saved_log)
    checkpoint_path(log).write_bytes(saved_cp)
    assert verify_log(log, keys=KEY).finding is None  # locally consistent: the known limit
    fill(log, 1, KEY, start=20)
    finding = verify_log(log, keys=KEY).finding
    assert finding is not None and finding.position == 11
    assert "checkpoint #10 found where this writer had written #20" in finding.message


def test_without_a_key_a_full_rewrite_passes(tmp_path: Path) -> None:
    """The documented limit of the keyless mode: log and checkpoint rewritten together."""
    log = tmp_path / "audit.jsonl"
    fill(log, 8)
    _allow_everything(log)
    assert {r["decision"] for r in records(log)} == {"allow"}
    assert verify_log(log, keys=None).finding is None


def test_with_a_key_the_checkpoint_cannot_be_forged(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    fill(log, 8, KEY)
    items = records(log)[:5]
    write(log, items)
    forge_checkpoint(log, items)
    finding = verify_log(log, keys=KEY).finding
    assert finding is not None and finding.position == 5 and "no MAC" in finding.message


def test_deleted_checkpoint(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    fill(log, 6)
    write(log, records(log)[:4])
    checkpoint_path(log).unlink()
    finding = verify_log(log).finding
    assert finding is not None and finding.position == 4 and "no checkpoint" in finding.message
    fill(log, 1, start=6)  # the next append does not paper over it
    finding = verify_log(log).finding
    assert finding is not None and "checkpoint was missing" in finding.message


def test_a_writer_stopped_before_its_checkpoint_is_not_an_alarm_with_a_key(
    tmp_path: Path,
) -> None:
    log = tmp_path / "audit.jsonl"
    fill(log, 3, KEY)
    before = checkpoint_path(log).read_bytes()
    fill(log, 1, KEY, start=3)
    checkpoint_path(log).write_bytes(before)  # as if the writer died between the two writes
    finding = verify_log(log, keys=KEY).finding
    assert finding is not None and finding.position == 4 and "not covered" in finding.message
    fill(log, 1, KEY, start=4)  # the next writer finishes the job: a key holder wrote it
    assert verify_log(log, keys=KEY).finding is None


def test_fresh_home_verifies_like_archive_verify(tmp_path: Path) -> None:
    env = {**os.environ, "AGENT_GATEWAY_HOME": str(tmp_path / "new"), "PYTHONPATH": str(ROOT)}
    audit = _cli(env, "audit", "verify")
    archive = _cli(env, "archive", "verify")
    assert (audit.returncode, archive.returncode) == (0, 0), audit.stderr + archive.stderr
    assert "OK, 0 records" in audit.stdout and "OK, 0 archives" in archive.stdout


def _worker(path: str, start: int) -> None:
    fill(Path(path), 40, KEY, start=start)


def test_no_false_alarm_under_eight_concurrent_writers(tmp_path: Path) -> None:
    import multiprocessing

    log = tmp_path / "audit.jsonl"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_worker, args=(str(log), i * 1000)) for i in range(8)]
    for proc in procs:
        proc.start()
    checks = 0
    while any(p.is_alive() for p in procs):
        report = verify_log(log, keys=KEY)  # while they append
        assert report.finding is None, report.finding
        checks += 1
    for proc in procs:
        proc.join()
        assert proc.exitcode == 0
    report = verify_log(log, keys=KEY)
    assert report.finding is None and report.count == 320 and checks > 0
    assert [r["seq"] for r in report.records] == list(range(1, 321))
    assert json.loads(checkpoint_path(log).read_text())["count"] == 320


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args], env=env, capture_output=True, text=True,
        timeout=60,
    )


def test_a_replayed_checkpoint_through_the_cli(tmp_path: Path, key_file: Path) -> None:
    log = tmp_path / "home" / "audit.jsonl"
    fill(log, 10, KEY)
    saved = checkpoint_path(log).read_bytes()
    fill(log, 10, KEY, start=10)
    write(log, records(log)[:15])
    checkpoint_path(log).write_bytes(saved)
    env = {**os.environ, "AGENT_GATEWAY_HOME": str(log.parent), "PYTHONPATH": str(ROOT),
           "AGENT_GATEWAY_AUDIT_KEY_FILE": str(key_file)}
    out = _cli(env, "audit", "verify")
    assert out.returncode == 1
    assert "FAILED at record 11: not covered by checkpoint #10" in out.stderr
