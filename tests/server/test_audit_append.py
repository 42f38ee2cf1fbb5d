"""The service's audit appends skip re-reading the tail only while the file is as it left it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gateway.audit import append_record, checkpoint_path, verify
from gateway.hashchain import GENESIS


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_chain_holds_when_another_process_appends_between(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    append_record({"n": 1}, log)
    script = "import sys; from pathlib import Path; from gateway.audit.log import append_record;"
    script += " append_record({'n': 2}, Path(sys.argv[1]))"
    root = str(Path(__file__).parents[2])
    subprocess.run(
        [sys.executable, "-c", script, str(log)],
        check=True,
        env={**os.environ, "PYTHONPATH": root},
    )
    append_record({"n": 3}, log)
    records = _records(log)
    assert [r["n"] for r in records] == [1, 2, 3]
    assert records[2]["prev_hash"] == records[1]["hash"]
    assert verify(log) is None


def test_replaced_file_starts_a_new_chain(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    append_record({"n": 1}, log)
    log.rename(tmp_path / "audit.1.jsonl")  # rotated away, with its checkpoint
    checkpoint_path(log).rename(tmp_path / "audit.1.jsonl.checkpoint")
    append_record({"n": 2}, log)
    assert _records(log)[0]["prev_hash"] == GENESIS
    assert verify(log) is None
    assert verify(tmp_path / "audit.1.jsonl") is None


def test_log_moved_without_its_checkpoint_is_flagged(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    append_record({"n": 1}, log)
    log.rename(tmp_path / "audit.1.jsonl")  # the checkpoint stays: as if the log was deleted
    append_record({"n": 2}, log)
    broken = verify(log)
    assert broken is not None and broken[0] == 1 and "checkpoint #1 counted 1" in broken[1]


def test_edited_tail_is_read_again(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    append_record({"n": 1}, log)
    with log.open("a") as handle:  # someone appended a line by hand
        handle.write(json.dumps({"n": 2, "hash": "f" * 64}) + "\n")
    linked = append_record({"n": 3}, log)
    assert linked["prev_hash"] == "f" * 64
    assert linked["seq"] == 3
    broken = verify(log)  # and the hand-made line is not forgotten
    assert broken is not None and broken[0] == 2


def test_removed_directory_is_created_again(tmp_path: Path) -> None:
    log = tmp_path / "state" / "audit.jsonl"
    append_record({"n": 1}, log)
    log.unlink()
    checkpoint_path(log).unlink()
    log.parent.rmdir()
    append_record({"n": 2}, log)
    assert _records(log)[0]["prev_hash"] == GENESIS


def test_a_huge_checkpoint_planted_by_someone_else_is_not_padded_to(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    append_record({"n": 1}, log)
    checkpoint_path(log).write_bytes(b" " * (8 << 20))
    append_record({"n": 2}, log)
    assert checkpoint_path(log).stat().st_size < 4096
    broken = verify(log)  # and what was found is kept
    assert broken is not None and "could not be trusted" in broken[1]
