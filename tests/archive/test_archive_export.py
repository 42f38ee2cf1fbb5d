"""Each archive written leaves as a log record too: from the command hook when
OTEL_LOGS_EXPORTER asks, and from the engine behind `run` and `serve`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.compaction import CompactionSettings
from gateway.handlers.engine import Engine
from gateway.handlers.trail import AuditExport
from gateway.hashchain import canonical_json
from gateway.telemetry.logs import log_settings, open_log_sink
from tests.archive.conftest import Session
from tests.handlers.test_compact import hook_input, run_hook
from tests.otlp_receiver import OtlpReceiver


def test_the_command_hook_exports_the_archive_when_asked(
    make_session: Callable[..., Session], settings: CompactionSettings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_LOGS_EXPORTER", "otlp")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        session = make_session()
        proc = run_hook(settings, hook_input(session))
        assert proc.returncode == 0, proc.stderr
        (log,) = receiver.logs
    manifest = json.loads(log["body"])
    assert log["event_name"] == "agent_gateway.audit.archive"
    assert manifest["session_id"] == session.session_id and manifest["seq"] == 1
    assert log["attributes"]["agent_gateway.compaction.archive_id"] == manifest["hash"]
    assert log["attributes"]["agent_gateway.archive.store"] == settings.path


def test_the_engine_exports_each_archive(
    make_session: Callable[..., Session], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"version: 1\ncompaction:\n  path: {tmp_path / 'store'}\n"
                      "  settle_timeout_s: 0\n")
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", receiver.endpoint + "/v1/logs")
        sink = open_log_sink(log_settings({"OTEL_LOGS_EXPORTER": "otlp"}))
        assert sink is not None
        export = AuditExport(sink)
        engine = Engine([str(policy)], audit_export=export)
        outcome = engine.pre_compact(make_session().request().raw).outcome
        assert outcome.archive_id and outcome.manifest is not None
        export.shutdown()
        (log,) = receiver.wait_for_logs(lambda got: len(got) == 1)
    assert log["body"] == canonical_json(outcome.manifest).decode()
    assert log["attributes"]["agent_gateway.audit.position"] == 1
    assert os.path.samefile(log["attributes"]["agent_gateway.archive.store"], tmp_path / "store")
