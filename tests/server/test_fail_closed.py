"""Failure injection on `serve`'s HTTP hooks: the steps the service itself takes around its
decision workers (the workers' own steps are in tests/handlers/test_fail_closed.py).

Whatever fails, a PreToolUse gets a deny and a PreCompact that must archive gets a block: the
worker dies or overruns, answers nonsense, the tracer or the audit log fails, the handler
itself raises. After a decision, tracing and the off-host copy never change it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.compaction import CompactionSettings
from gateway.handlers.engine import Engine
from gateway.handlers.trail import AuditExport
from gateway.server.app import SERVICE
from gateway.server.decision_worker import WorkerError
from gateway.server.service import GatewayService
from gateway.server.tracing import ServerTracer
from gateway.server.workers import JobFailed, JobTimeout, WorkerPool
from gateway.tenancy.tokens import Caller
from tests.archive.conftest import Session, make_session, projects
from tests.server.conftest import AppFactory
from tests.server.test_app import decision_of, pre_tool_use

__all__ = ["make_session", "projects"]  # the archive tests' sessions, as fixtures here


class Boom(RuntimeError):
    pass


def _raise(*_args: Any, **_kwargs: Any) -> Any:
    raise Boom("injected failure")


def audit_records(policy_file: Path) -> list[dict[str, Any]]:
    path = policy_file.parent / "gw-home" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        (JobFailed("the decision worker died (exit code -9)"), "worker died"),
        (JobTimeout("no answer within 2 s"), "decision budget"),
    ],
)
async def test_a_worker_that_dies_or_overruns_is_a_recorded_deny(
    make_client: AppFactory, policy_file: Path, monkeypatch: pytest.MonkeyPatch,
    failure: Exception, said: str,
) -> None:
    async def call(_self: WorkerPool, _request: Any) -> Any:
        raise failure

    monkeypatch.setattr(WorkerPool, "call", call)
    client, sink = await make_client()
    resp = await client.post("/hooks/PreToolUse", json=pre_tool_use("echo allowed"))
    answer = await resp.json()
    assert resp.status == 200 and decision_of(answer) == "deny"
    assert said in answer["hookSpecificOutput"]["permissionDecisionReason"]
    (record,) = audit_records(policy_file)
    assert (record["decision"], record["rule_id"]) == ("deny", "gateway.fail-closed")
    assert record["tenant"] == "anonymous"
    (span,) = sink.spans
    assert span.status.code == "error"


@pytest.mark.parametrize("reply", [WorkerError("MemoryError: out of memory"), ("ok", None), None])
async def test_a_worker_reply_that_is_not_a_decision_is_a_deny(
    make_client: AppFactory, monkeypatch: pytest.MonkeyPatch, reply: Any
) -> None:
    async def call(_self: WorkerPool, _request: Any) -> Any:
        return reply

    monkeypatch.setattr(WorkerPool, "call", call)
    client, _ = await make_client()
    resp = await client.post("/hooks/PreToolUse", json=pre_tool_use("echo allowed"))
    assert resp.status == 200 and decision_of(await resp.json()) == "deny"


async def test_a_failing_tracer_never_turns_a_deny_into_an_error(
    make_client: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ServerTracer, "on_tool_denied", _raise)
    monkeypatch.setattr(ServerTracer, "on_tool_end", _raise)
    client, _ = await make_client()
    resp = await client.post("/hooks/PreToolUse", json=pre_tool_use("rm -rf /tmp/x"))
    assert resp.status == 200 and decision_of(await resp.json()) == "deny"
    resp = await client.post("/hooks/PreToolUse", json=pre_tool_use("echo hi", tool_use_id="t2"))
    assert decision_of(await resp.json()) == "allow"
    post = {**pre_tool_use("echo hi", tool_use_id="t2"), "hook_event_name": "PostToolUse"}
    resp = await client.post("/hooks/PostToolUse", json=post)
    assert resp.status == 200


async def test_a_deny_the_service_cannot_record_still_stands(
    make_client: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def call(_self: WorkerPool, _request: Any) -> Any:
        raise JobFailed("the decision worker died")

    monkeypatch.setattr(WorkerPool, "call", call)
    monkeypatch.setattr(GatewayService, "_append", _raise)
    client, _ = await make_client()
    resp = await client.post("/hooks/PreToolUse", json=pre_tool_use("echo allowed"))
    assert resp.status == 200 and decision_of(await resp.json()) == "deny"


@pytest.mark.parametrize(("event", "blocking"), [
    ("PreToolUse", {"permissionDecision": "deny"}),
    ("PreCompact", {"decision": "block"}),
    ("PostToolUse", {}),
])
async def test_a_handler_that_raises_answers_500_with_the_blocking_answer(
    make_client: AppFactory, monkeypatch: pytest.MonkeyPatch, event: str, blocking: dict[str, str]
) -> None:
    monkeypatch.setattr(GatewayService, "hook", _raise)
    client, _ = await make_client()
    resp = await client.post(f"/hooks/{event}", json={"session_id": "s-1"})
    assert resp.status == 500
    body = await resp.json()
    assert "could not answer" in body["error"] and "injected failure" in body["error"]
    flat = {**body, **body.get("hookSpecificOutput", {})}
    assert all(flat.get(k) == v for k, v in blocking.items()), body


async def test_a_failing_off_host_copy_never_changes_the_decision(
    make_client: AppFactory, policy_file: Path
) -> None:
    class FailingSink:
        def emit(self, _event: Any) -> None:
            raise Boom("collector down")

        def shutdown(self) -> None:
            pass

    client, _ = await make_client(audit_export=AuditExport(FailingSink()))  # type: ignore[arg-type]
    resp = await client.post("/hooks/PreToolUse", json=pre_tool_use("rm -rf /tmp/x"))
    assert decision_of(await resp.json()) == "deny"
    resp = await client.post("/hooks/PreToolUse", json=pre_tool_use("echo hi", tool_use_id="t2"))
    assert decision_of(await resp.json()) == "allow"
    assert [r["decision"] for r in audit_records(policy_file)] == ["deny", "allow"]


async def test_a_pre_compact_whose_policy_cannot_be_read_blocks(
    make_client: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, _ = await make_client()
    service = client.server.app[SERVICE]
    monkeypatch.setattr(service, "engine_for", _raise)
    body = {"hook_event_name": "PreCompact", "session_id": "s-1", "trigger": "manual",
            "transcript_path": "/nonexistent.jsonl", "custom_instructions": None}
    resp = await client.post("/hooks/PreCompact", json=body)
    answer = await resp.json()
    assert answer.get("decision") == "block", answer


@pytest.mark.parametrize("required", [True, False])
async def test_a_pre_compact_whose_archive_raises_blocks_when_required(
    make_client: AppFactory, make_session: Callable[..., Session], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, required: bool,
) -> None:
    import gateway.archive.archiver as archiver

    settings = CompactionSettings(path=str(tmp_path / "store"), settle_timeout_s=0,
                                  require_archive=required)
    monkeypatch.setattr(Engine, "compaction_settings", lambda _self: (settings, "ph"))
    monkeypatch.setattr(archiver, "archive_session", _raise)
    monkeypatch.setattr(ServerTracer, "on_compaction", _raise)
    client, _ = await make_client()
    resp = await client.post("/hooks/PreCompact", json=dict(make_session().request().raw))
    answer = await resp.json()
    assert resp.status == 200
    assert (answer.get("decision") == "block") == required, answer
    said = answer.get("reason") or answer.get("systemMessage", "")
    assert "injected failure" in said


async def test_a_failing_tracer_never_changes_a_pre_compact_answer(
    make_client: AppFactory, make_session: Callable[..., Session], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = CompactionSettings(path=str(tmp_path / "store"), settle_timeout_s=0,
                                  require_archive=True)
    monkeypatch.setattr(Engine, "compaction_settings", lambda _self: (settings, "ph"))
    monkeypatch.setattr(ServerTracer, "on_compaction", _raise)
    client, _ = await make_client()
    resp = await client.post("/hooks/PreCompact", json=dict(make_session().request().raw))
    assert resp.status == 200 and await resp.json() == {}
    assert list((tmp_path / "store" / "manifests").iterdir())


async def test_a_remote_runs_decision_is_a_workers_and_without_one_a_recorded_deny(
    make_client: AppFactory, policy_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, _ = await make_client()
    service = client.app[SERVICE]
    caller = Caller(name="team-a")
    body = pre_tool_use("echo from a run")
    raw = json.dumps(body).encode()
    seen: list[Any] = []
    real_call = WorkerPool.call

    async def call(self: WorkerPool, request: Any) -> Any:
        seen.append(request)
        return await real_call(self, request)

    monkeypatch.setattr(WorkerPool, "call", call)
    decided = await service.decide_for_run(caller, raw, body, "", "bwrap is missing")
    assert decided.decision.kind == "allow" and decided.record is not None
    assert (seen[0].body, seen[0].tenant, seen[0].sandbox_unavailable) == (
        raw, "team-a", "bwrap is missing")

    async def overrun(_self: WorkerPool, _request: Any) -> Any:
        raise JobTimeout("no answer within 2 s")

    monkeypatch.setattr(WorkerPool, "call", overrun)
    denied = await service.decide_for_run(caller, raw, body, "", "")
    assert denied.decision.kind == "deny" and "decision budget" in denied.decision.reason
    assert decision_of(dict(denied.output)) == "deny"
    records = audit_records(policy_file)
    assert [(r["decision"], r["tenant"]) for r in records] == [
        ("allow", "team-a"), ("deny", "team-a")]
    assert denied.record is not None and denied.record["hash"] == records[-1]["hash"]
