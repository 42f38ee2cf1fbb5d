"""`audit verify --against`: the local chain checked against the copy that left the host."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gateway.audit import checkpoint_path
from gateway.audit.commands import audit_verify
from gateway.handlers.trail import AuditExport
from gateway.telemetry.logs import log_settings, open_log_sink
from tests.audit.tamper import KEY, fill, forge_checkpoint, records, write
from tests.otlp_receiver import OtlpReceiver


def _exported(log: Path, count: int, tmp_path: Path, *, start: int = 0) -> Path:
    """`count` decisions appended to `log` and exported; the OTLP JSON lines file received."""
    with OtlpReceiver() as receiver, pytest.MonkeyPatch.context() as otel:
        otel.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", receiver.endpoint + "/v1/logs")
        sink = open_log_sink(log_settings({"OTEL_LOGS_EXPORTER": "otlp"}))
        assert sink is not None
        export = AuditExport(sink)
        before = len(records(log)) if log.exists() else 0
        fill(log, count, start=start)
        for record in records(log)[before:]:
            export.decision(record)
        export.shutdown()
        receiver.wait_for_logs(lambda got: len(got) == count)
        return receiver.write_log_lines(tmp_path / f"export-{start}.jsonl")


def _verify(log: Path, against: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = audit_verify(str(log), against=str(against), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_the_received_copy_matches(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    copy = _exported(log, 12, tmp_path)
    code, out, err = _verify(log, copy)
    assert code == 0, err
    assert f"OK, 12 records in {log}" in out and f"matches {copy}" in out


def test_a_cut_that_fools_the_local_checks_is_named_from_the_copy(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    copy = _exported(log, 20, tmp_path)
    # Cut the log and put back a checkpoint that matches the cut (exactly what a writer with
    # everything local can do): the local checks pass...
    kept = records(log)[:14]
    write(log, kept)
    forge_checkpoint(log, kept)
    out, err = io.StringIO(), io.StringIO()
    assert audit_verify(str(log), out=out, err=err) == 0
    # ...and the copy names what is gone.
    code, _, err_text = _verify(log, copy)
    assert code == 1
    assert "records 15-20: in the export, missing from the local log" in err_text


def test_records_the_export_never_got_and_records_that_differ(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    copy = _exported(log, 5, tmp_path)
    fill(log, 3, start=5)  # appended while the collector was unreachable
    code, _, err = _verify(log, copy)
    assert code == 1 and "records 6-8: in the local log, missing from the export" in err
    lines = copy.read_text().splitlines()
    request = json.loads(lines[0])
    log_record = request["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
    body = json.loads(log_record["body"]["stringValue"])
    body["decision"] = "allow"  # the copy altered in transit: its own hash gives it away
    log_record["body"]["stringValue"] = json.dumps(body)
    copy.write_text(json.dumps(request) + "\n" + "\n".join(lines[1:]) + "\n")
    code, _, err = _verify(log, copy)
    assert code == 1 and "does not match its own hash" in err


def test_an_exact_replay_shows_up_as_a_fork_in_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Log and checkpoint rolled back together to a saved state, then the gateway goes on:
    every local check passes, but the copy holds two different records at one position."""
    log = tmp_path / "audit.jsonl"
    first = _exported(log, 6, tmp_path)
    saved_log, saved_cp = log.read_bytes(), checkpoint_path(log).read_bytes()
    second = _exported(log, 4, tmp_path, start=6)
    log.write_bytes(saved_log)
    checkpoint_path(log).write_bytes(saved_cp)
    monkeypatch.setattr("gateway.audit.log._STATE", {})  # a new process: no memory of #10
    third = _exported(log, 2, tmp_path, start=100)
    combined = tmp_path / "siem.jsonl"
    combined.write_text(first.read_text() + second.read_text() + third.read_text())
    out, err = io.StringIO(), io.StringIO()
    assert audit_verify(str(log), out=out, err=err) == 0
    code, _, err_text = _verify(log, combined)
    assert code == 1
    assert "records 7-8: differ between the local log and the export" in err_text
    assert "records 9-10: in the export, missing from the local log" in err_text


def test_an_unreadable_export_is_one_line(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    fill(log, 1, KEY)
    code, _, err = _verify(log, tmp_path / "absent.jsonl")
    assert code == 2 and err.count("\n") == 1 and "cannot read the export" in err
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("{not json\n")
    code, _, err = _verify(log, garbage)
    assert code == 1 and "garbage.jsonl:1: not JSON" in err


def test_chains_are_told_apart(tmp_path: Path) -> None:
    other = tmp_path / "other" / "audit.jsonl"
    foreign = _exported(other, 3, tmp_path / "other")
    log = tmp_path / "audit.jsonl"
    mine = _exported(log, 2, tmp_path)
    combined = tmp_path / "both.jsonl"
    combined.write_text(foreign.read_text() + mine.read_text())
    code, _, err = _verify(log, combined)
    assert code == 0, err
