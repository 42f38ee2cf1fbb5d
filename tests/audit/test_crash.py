"""A writer stopped at any instant (SIGKILL, a crash) leaves a log that verifies and that the
next append continues without an alarm, with or without a key; and what such a stop could be
mistaken for (a record added behind the gateway's back) is still caught."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.audit import checkpoint_path, verify_log
from gateway.audit import log as audit_log
from gateway.hashchain import link
from gateway.integrity.keys import KeySet
from tests.audit.tamper import KEY, fill, records
from tests.faults.trail import times

CTX = multiprocessing.get_context("fork")


def _crash_in_record_write(how: str) -> Callable[..., None]:
    """A replacement for the record write that stops the process (as SIGKILL would: no
    cleanup) before it, after it, or after part of the line."""
    original = audit_log._write_whole

    def write(fd: int, line: bytes, size: int, target: Path) -> None:
        if how == "torn":
            os.write(fd, line[: len(line) // 2])
        elif how == "after":
            original(fd, line, size, target)
        os._exit(9)

    return write


def _stopped_writer(log: str, how: str, keyed: bool) -> None:
    audit_log._write_whole = _crash_in_record_write(how)  # type: ignore[assignment]
    fill(Path(log), 1, KEY if keyed else None, start=100)


def _stop_a_writer(log: Path, how: str, keys: KeySet | None) -> None:
    proc = CTX.Process(target=_stopped_writer, args=(str(log), how, keys is not None))
    proc.start()
    proc.join(30)
    assert proc.exitcode == 9


@pytest.mark.parametrize("keyed", [False, True], ids=["no key", "key"])
@pytest.mark.parametrize("how", ["before", "torn", "after"])
def test_a_writer_stopped_at_each_step_leaves_no_alarm(tmp_path: Path, how: str,
                                                       keyed: bool) -> None:
    keys = KEY if keyed else None
    log = tmp_path / "audit.jsonl"
    fill(log, 5, keys)
    _stop_a_writer(log, how, keys)

    report = verify_log(log, keys=keys)
    assert report.finding is None, report.finding
    assert report.count == (6 if how == "after" else 5)
    if how == "torn":
        assert any("interrupted" in note for note in report.notes)
    fill(log, 3, keys, start=200)  # the next writer goes on
    report = verify_log(log, keys=keys)
    assert report.finding is None, report.finding
    assert [r["seq"] for r in report.records] == list(range(1, report.count + 1))
    assert report.count == (9 if how == "after" else 8)
    assert "alarm" not in json.loads(checkpoint_path(log).read_text())


def _forged_after(path: Path) -> dict[str, Any]:
    """A record an editor appends: linked and numbered like the next one, hash recomputed."""
    items = records(path)
    forged = {k: v for k, v in items[-1].items() if k not in ("hash", "prev_hash", "mac")}
    forged.update(seq=len(items) + 1, decision="allow", tool_use_id="forged")
    return link(forged, items[-1]["hash"])


def test_a_record_appended_after_a_stopped_writer_is_still_caught(tmp_path: Path) -> None:
    """The writer announced a record and stopped before writing it; a record appended in its
    place is not the one announced."""
    log = tmp_path / "audit.jsonl"
    fill(log, 5)
    _stop_a_writer(log, "before", None)
    with log.open("a") as handle:
        handle.write(json.dumps(_forged_after(log), sort_keys=True) + "\n")
    finding = verify_log(log).finding
    assert finding is not None and finding.position == 6 and "not covered" in finding.message
    fill(log, 1, start=300)
    finding = verify_log(log).finding
    assert finding is not None and finding.position == 6 and "held 6 records" in finding.message


def test_a_record_appended_to_a_quiet_log_is_caught(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    fill(log, 5)
    with log.open("a") as handle:
        handle.write(json.dumps(_forged_after(log), sort_keys=True) + "\n")
    finding = verify_log(log).finding
    assert finding is not None and finding.position == 6 and "not covered" in finding.message


def test_a_line_cut_short_by_an_editor_is_not_cut_off(tmp_path: Path) -> None:
    """Only the tail a stopped writer announced is cut: an unterminated line appended to a
    quiet log, or a whole short line after an announcement, is damage and stays visible."""
    log = tmp_path / "audit.jsonl"
    fill(log, 5)
    with log.open("ab") as handle:
        handle.write(b'{"decision": "allow"')
    finding = verify_log(log).finding
    assert finding is not None and finding.position == 6

    other = tmp_path / "other.jsonl"
    fill(other, 5)
    _stop_a_writer(other, "before", None)
    with other.open("ab") as handle:
        handle.write(b'{"x": 1}\n')  # shorter than the announced line, but a line of its own
    finding = verify_log(other).finding
    assert finding is not None and finding.position == 6


def _append_forever(log: str, keyed: bool) -> None:
    fill(Path(log), 1_000_000, KEY if keyed else None)


@pytest.mark.parametrize("keyed", [False, True], ids=["no key", "key"])
def test_sigkill_at_random_instants_never_leaves_an_alarm(tmp_path: Path, keyed: bool) -> None:
    """Real SIGKILLs in a tight loop: each kill lands wherever the writer is (before the
    fix, about 1 in 12 left a permanent alarm without a key)."""
    keys = KEY if keyed else None
    log = tmp_path / "audit.jsonl"
    rng = random.Random(22)
    kills = times(40, 500)
    for _ in range(kills):
        proc = CTX.Process(target=_append_forever, args=(str(log), keyed))
        proc.start()
        time.sleep(0.005 + rng.random() * 0.02)
        assert proc.pid is not None
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(10)
        report = verify_log(log, keys=keys)
        assert report.finding is None, report.finding
    fill(log, 1, keys, start=10**7)
    report = verify_log(log, keys=keys)
    assert report.finding is None, report.finding
    assert report.count > kills
    assert "alarm" not in json.loads(checkpoint_path(log).read_text())
