"""Tenants of one gateway never act on each other's sessions; remote runs stay in their roots."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.errors import ConfigError
from gateway.scripted import ScriptedServer
from gateway.server.owners import LocalSessionOwners, OwnerCache
from gateway.server.remote_runs import RUNS_OFF
from gateway.server.runs import OUTSIDE_ROOTS
from gateway.tenancy.tokens import Caller, TokenTable, load_tokens
from tests.server.conftest import AppFactory
from tests.server.test_app import decision_of, pre_tool_use

A = {"Authorization": "Bearer tok-a"}
B = {"Authorization": "Bearer tok-b"}
TEAMS = TokenTable({"tok-a": Caller("team-a"), "tok-b": Caller("team-b")})


# --- the owner store ------------------------------------------------------------------------
def test_first_claim_wins_and_is_kept(tmp_path: Path) -> None:
    owners = LocalSessionOwners(tmp_path / "sessions")
    assert owners.claim("s-1", "team-a") == "team-a"
    assert owners.claim("s-1", "team-b") == "team-a"
    assert LocalSessionOwners(tmp_path / "sessions").claim("s-1", "team-b") == "team-a"
    assert owners.claim("../../etc/passwd", "team-b") == "team-b"  # hashed, never a path
    assert not list(tmp_path.glob("etc*")) and owners.problem() == ""
    assert not [p for p in (tmp_path / "sessions").rglob(".claim-*")]


def _claim(args: tuple[str, str]) -> str:
    directory, tenant = args
    return LocalSessionOwners(Path(directory)).claim("contested", tenant)


def test_concurrent_claims_from_processes_have_one_winner(tmp_path: Path) -> None:
    tenants = [f"team-{n}" for n in range(16)]
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        owners = pool.map(_claim, [(str(tmp_path / "sessions"), t) for t in tenants])
    assert len(set(owners)) == 1 and owners[0] in tenants


def test_an_unwritable_store_is_a_problem(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    owners = LocalSessionOwners(blocker / "sessions")
    assert "not writable" in owners.problem()
    with pytest.raises(OSError):
        owners.claim("s", "team-a")


def test_owner_cache_is_bounded() -> None:
    cache = OwnerCache(capacity=2)
    cache.put("a", "x")
    cache.put("b", "y")
    assert cache.get("a") == "x"
    cache.put("c", "z")  # "b" is the least recently used
    assert cache.get("b") is None and cache.get("a") == "x" and cache.get("c") == "z"


# --- hooks ----------------------------------------------------------------------------------
def audit(policy_file: Path) -> list[dict[str, Any]]:
    path = policy_file.parent / "gw-home" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


async def teams(make_client: AppFactory, tmp_path: Path, **options: Any) -> TestClient[Any, Any]:
    owners = LocalSessionOwners(tmp_path / "sessions")
    client, _ = await make_client(tokens=TEAMS, owners=owners, **options)
    return client


async def test_team_a_cannot_hook_into_team_bs_session(
    make_client: AppFactory, tmp_path: Path, policy_file: Path
) -> None:
    client = await teams(make_client, tmp_path)
    start = {"hook_event_name": "SessionStart", "session_id": "s-b", "source": "startup"}
    assert (await client.post("/hooks/SessionStart", json=start, headers=B)).status == 200

    tool = await client.post("/hooks/PreToolUse", json=pre_tool_use("echo hi", "s-b"), headers=A)
    assert tool.status == 403
    answer = await tool.json()
    assert decision_of(answer) == "deny"
    assert "belongs to another tenant" in answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert "team-b" not in json.dumps(answer)  # who owns it is not told
    for event in ("PostToolUse", "Stop", "SessionEnd"):
        refused = await client.post(f"/hooks/{event}", json={"session_id": "s-b"}, headers=A)
        assert refused.status == 403, event
    compact = {"session_id": "s-b", "transcript_path": "/x/s-b.jsonl", "trigger": "manual"}
    blocked = await client.post("/hooks/PreCompact", json=compact, headers=A)
    assert blocked.status == 403 and (await blocked.json())["decision"] == "block"

    mine = await client.post("/hooks/PreToolUse", json=pre_tool_use("echo hi", "s-b"), headers=B)
    assert mine.status == 200 and decision_of(await mine.json()) == "allow"

    records = audit(policy_file)
    refusals = [r for r in records if r.get("rule_id") == "gateway.tenant"]
    assert [(r["event"], r["decision"], r["tenant"]) for r in refusals] == [
        ("PreToolUse", "deny", "team-a"),
        ("PostToolUse", "refused", "team-a"),
        ("Stop", "refused", "team-a"),
        ("SessionEnd", "refused", "team-a"),
        ("PreCompact", "refused", "team-a"),
    ]
    assert all(r["session_id"] == "s-b" for r in refusals)
    assert records[-1]["tenant"] == "team-b" and records[-1]["decision"] == "allow"


async def test_the_first_hook_of_any_kind_records_the_owner(
    make_client: AppFactory, tmp_path: Path
) -> None:
    client = await teams(make_client, tmp_path)
    first = await client.post("/hooks/PreToolUse", json=pre_tool_use("echo", "s-a"), headers=A)
    assert first.status == 200
    refused = await client.post("/hooks/Stop", json={"session_id": "s-a"}, headers=B)
    assert refused.status == 403
    assert LocalSessionOwners(tmp_path / "sessions").claim("s-a", "x") == "team-a"


async def test_a_replica_sharing_the_store_refuses_too(
    make_client: AppFactory, tmp_path: Path
) -> None:
    one = await teams(make_client, tmp_path)
    two = await teams(make_client, tmp_path)
    await one.post("/hooks/SessionStart", json={"session_id": "s-b"}, headers=B)
    refused = await two.post("/hooks/PreToolUse", json=pre_tool_use("ls", "s-b"), headers=A)
    assert refused.status == 403


async def test_an_unusable_owner_store_denies(make_client: AppFactory, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    client, _ = await make_client(tokens=TEAMS, owners=LocalSessionOwners(blocker / "s"))
    resp = await client.post("/hooks/PreToolUse", json=pre_tool_use("ls"), headers=A)
    assert resp.status == 503 and decision_of(await resp.json()) == "deny"
    ready = await client.get("/readyz", headers=A)  # why, only to a token
    assert ready.status == 503
    assert any("session owner store" in p for p in (await ready.json())["problems"])
    anonymous = await client.get("/readyz")
    assert anonymous.status == 503 and await anonymous.json() == {"ready": False}


# --- PreCompact: only the session's own transcript ------------------------------------------
async def test_pre_compact_refuses_another_sessions_transcript_and_hard_links(
    make_client: AppFactory, tmp_path: Path, policy_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    projects = tmp_path / "projects"
    (projects / "-srv").mkdir(parents=True)
    monkeypatch.setenv("AGENT_GATEWAY_CLAUDE_PROJECTS", str(projects))
    mine, theirs = projects / "-srv" / "s-a.jsonl", projects / "-srv" / "s-b.jsonl"
    mine.write_text('{"type": "user"}\n')
    theirs.write_text('{"type": "user", "secret": true}\n')
    client = await teams(make_client, tmp_path)
    await client.post("/hooks/SessionStart", json={"session_id": "s-b"}, headers=B)

    def compact(path: Path) -> dict[str, Any]:
        return {"hook_event_name": "PreCompact", "session_id": "s-a",
                "transcript_path": str(path), "trigger": "manual"}

    # named under my own session id: refused all the same, and (require_archive being on by
    # default) the compaction is blocked rather than run on an unarchived transcript
    other = await (await client.post("/hooks/PreCompact", json=compact(theirs), headers=A)).json()
    assert other["decision"] == "block"
    assert "not the transcript of session" in other["reason"]
    outside = tmp_path / "id_rsa"
    outside.write_text("key\n")
    mine.unlink()
    os.link(outside, mine)
    linked = await (await client.post("/hooks/PreCompact", json=compact(mine), headers=A)).json()
    assert linked["decision"] == "block" and "hard links" in linked["reason"]
    assert not (policy_file.parent / "gw-home" / "archive").exists()

    records = [r for r in audit(policy_file) if r["event"] == "PreCompact"]
    assert [r["decision"] for r in records] == ["block", "block"]
    assert "not the transcript" in records[0]["reason"] and "hard links" in records[1]["reason"]


# --- the proxy ------------------------------------------------------------------------------
async def test_model_requests_for_another_tenants_session_are_refused(
    make_client: AppFactory, tmp_path: Path, policy_file: Path
) -> None:
    upstream = ScriptedServer({"responses": [{"text": "hi"}]}).start()
    try:
        client = await teams(make_client, tmp_path, upstream=upstream.url)
        request = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
        mine = await client.post(
            "/v1/messages", json=request, headers={**B, "X-Claude-Code-Session-Id": "s-b"}
        )
        assert mine.status == 200  # the first proxied request records team B as the owner
        theirs = await client.post(
            "/v1/messages", json=request, headers={**A, "X-Claude-Code-Session-Id": "s-b"}
        )
        assert theirs.status == 403
        error = (await theirs.json())["error"]
        assert error["type"] == "permission_error" and "another tenant" in error["message"]
        assert len(upstream.requests) == 1
        # the gateway token never reaches the upstream
        assert "tok-b" not in json.dumps(dict(upstream.requests[0].headers))
    finally:
        upstream.stop()
    (record,) = [r for r in audit(policy_file) if r.get("rule_id") == "gateway.tenant"]
    assert record["event"] == "ModelRequest" and record["tenant"] == "team-a"


async def test_the_gateway_token_may_come_as_x_api_key_and_is_not_forwarded(
    make_client: AppFactory, tmp_path: Path
) -> None:
    upstream = ScriptedServer({"responses": [{"text": "hi"}]}).start()
    try:
        client = await teams(make_client, tmp_path, upstream=upstream.url)
        request = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
        # apiKeyHelper with ANTHROPIC_AUTH_TOKEN: the upstream credential in Authorization,
        # the helper's value (the gateway token) in x-api-key
        resp = await client.post(
            "/v1/messages",
            json=request,
            headers={"Authorization": "Bearer upstream-secret", "x-api-key": "tok-a"},
        )
        assert resp.status == 200
        sent = {k.lower(): v for k, v in upstream.requests[0].headers.items()}
        assert sent["authorization"] == "Bearer upstream-secret" and "x-api-key" not in sent
    finally:
        upstream.stop()


# --- remote runs ----------------------------------------------------------------------------
async def test_runs_are_off_without_a_root(make_client: AppFactory, tmp_path: Path) -> None:
    client = await teams(make_client, tmp_path)
    resp = await client.post("/v1/runs", json={"prompt": "hi", "cwd": str(tmp_path)}, headers=A)
    assert resp.status == 403 and (await resp.json())["error"] == RUNS_OFF
    assert "--runs-root DIR" in RUNS_OFF


@pytest.mark.parametrize(
    ("cwd", "status", "message"),
    [
        # outside the roots: one answer, whatever is there (nothing about the host is told)
        ("/", 403, OUTSIDE_ROOTS),
        ("/etc", 403, OUTSIDE_ROOTS),
        ("/etc/passwd", 403, OUTSIDE_ROOTS),
        ("/nonexistent/dir", 403, OUTSIDE_ROOTS),
        ("{root}/../elsewhere", 403, OUTSIDE_ROOTS),
        ("{root}/../elsewhere/missing", 403, OUTSIDE_ROOTS),
        ("{root}/escape", 403, OUTSIDE_ROOTS),
        ("{root}/dangling", 403, OUTSIDE_ROOTS),
        ("relative/dir", 400, "'cwd' must be an absolute path"),
        ("{root}/missing", 400, "not a directory"),
        (None, 400, "'cwd' is required"),
    ],
)
async def test_run_cwd_must_resolve_inside_a_root(
    make_client: AppFactory, tmp_path: Path, policy_file: Path,
    cwd: str | None, status: int, message: str,
) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (root / "escape").symlink_to(tmp_path / "elsewhere")
    (root / "dangling").symlink_to(tmp_path / "nowhere")
    client = await teams(make_client, tmp_path, runs_roots=[str(root)])
    body: dict[str, Any] = {"prompt": "hi"}
    if cwd is not None:
        body["cwd"] = cwd.format(root=root)
    resp = await client.post("/v1/runs", json=body, headers=A)
    assert resp.status == status
    error = (await resp.json())["error"]
    assert error == message if status == 403 else message in error
    assert "elsewhere" not in error and "nowhere" not in error
    if status == 403:
        (record,) = audit(policy_file)
        assert record["event"] == "RemoteRun" and record["decision"] == "refused"


async def test_run_resume_and_fork_of_another_tenants_session_are_refused(
    make_client: AppFactory, tmp_path: Path, policy_file: Path
) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    client = await teams(make_client, tmp_path, runs_roots=[str(root)])
    await client.post("/hooks/SessionStart", json={"session_id": "s-b"}, headers=B)
    base = {"prompt": "what did they say?", "cwd": str(root), "resume": "s-b"}
    resume = await client.post("/v1/runs", json=base, headers=A)
    assert resume.status == 403 and "cannot resume" in (await resume.json())["error"]
    fork = await client.post("/v1/runs", json={**base, "fork_session": True}, headers=A)
    assert fork.status == 403 and "cannot fork" in (await fork.json())["error"]
    refusals = [r for r in audit(policy_file) if r["event"] == "RemoteRun"]
    assert [(r["session_id"], r["tenant"]) for r in refusals] == [("s-b", "team-a")] * 2


async def test_a_tokens_own_roots_replace_the_servers(tmp_path: Path) -> None:
    from gateway.server.service import GatewayService

    mine, servers = tmp_path / "team-a", tmp_path / "shared"
    mine.mkdir()
    servers.mkdir()
    policy = tmp_path / "p.yaml"
    policy.write_text("version: 1\nname: p\n")
    service = GatewayService([str(policy)], runs_roots=[str(servers)])
    try:
        caller = Caller("team-a", runs_roots=(str(mine),))
        spec = await service.prepare_run({"prompt": "x", "cwd": str(mine)}, caller)
        assert spec.options["cwd"] == str(mine.resolve())
        with pytest.raises(Exception, match="outside"):
            await service.prepare_run({"prompt": "x", "cwd": str(servers)}, caller)
        spec = await service.prepare_run({"prompt": "x", "cwd": str(servers)}, Caller("other"))
        assert spec.options["cwd"] == str(servers.resolve())
    finally:
        await service.close()


# --- the tokens file ------------------------------------------------------------------------
def tokens_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "tokens.yaml"
    path.write_text(text)
    return str(path)


def test_tokens_file_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEAM_B_TOKEN", "from-env")
    table = load_tokens(None, tokens_file(tmp_path, (
        "tokens:\n"
        "  - {token: a, name: team-a, policies: [team-a.yaml], runs_roots: [runs/a]}\n"
        "  - {token_env: TEAM_B_TOKEN, name: team-b}\n"
    )))
    a, b = table.lookup("a"), table.lookup("from-env")
    assert a is not None and b is not None
    assert a.extra_policies == (str(tmp_path / "team-a.yaml"),)
    assert a.runs_roots == (str(tmp_path / "runs" / "a"),)
    assert b.name == "team-b" and b.runs_roots is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tokens:\n  - {token: a, name: x, budget: {usd: 5, per: hour}}\n",
         "tokens[0].budget.per must be one of day, week, month, got 'hour'"),
        ("tokens:\n  - {token: a, name: x, budget: {usd: -1, per: day}}\n",
         "tokens[0].budget.usd must be a number above 0"),
        ("tokens:\n  - {token: a, name: x, budget: [{usd: 5, per: day, cap: 1}]}\n",
         "tokens[0].budget[0]: unknown key(s) cap"),
        ("tokens:\n  - {token: a, name: x, budget: {usd: 5, per: day}}\n"
         "  - {token: b, name: x, budget: {usd: 6, per: day}}\n", "different budgets"),
        ("tokens:\n  - {token: a, name: x, polices: [p.yaml]}\n", "unknown key(s) polices"),
        ("tokens: []\nextra: 1\n", "exactly one key"),
        ("tokens:\n  - {token: a}\n  - {token: a}\n", "repeats a token"),
        ("tokens:\n  - {token: a, runs_roots: /srv}\n", "runs_roots must be a list"),
        ("tokens:\n  - {token: a, name: 3}\n", "name must be a non-empty string"),
        ("tokens:\n  - {token_env: UNSET_FOR_SURE}\n", "has no token"),
    ],
)
def test_tokens_file_mistakes_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_tokens(None, tokens_file(tmp_path, text))
    assert message in str(error.value) and "\n" not in str(error.value)


async def test_two_different_gateway_tokens_are_refused(
    make_client: AppFactory, tmp_path: Path
) -> None:
    client = await teams(make_client, tmp_path)
    both = {"Authorization": "Bearer tok-a", "X-Agent-Gateway-Token": "tok-b"}
    resp = await client.post("/hooks/PreToolUse", json=pre_tool_use("ls"), headers=both)
    assert resp.status == 401
    answer = await resp.json()
    assert decision_of(answer) == "deny" and "AGENT_GATEWAY_TOKEN" in answer["error"]
    same = {"Authorization": "Bearer tok-a", "X-Agent-Gateway-Token": "tok-a"}
    resp = await client.post("/hooks/PreToolUse", json=pre_tool_use("echo hi"), headers=same)
    assert resp.status == 200
    blocked = await client.post("/hooks/PreCompact", json={"session_id": "s"})
    assert blocked.status == 401 and (await blocked.json())["decision"] == "block"
