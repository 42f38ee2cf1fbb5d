"""`agent-gateway serve` in front of the BARE real Claude Code (`claude -p --settings ...`).

The session's ANTHROPIC_BASE_URL is the gateway (from the generated settings), whose
--upstream is the scripted Messages API; hooks are http hooks with onFailure block.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from gateway.scripted import ScriptedServer
from gateway.server.claude_settings import gateway_settings
from tests.e2e.harness import CLAUDE_BIN, Sandbox, claude_run, gateway_cli, print_settings
from tests.otlp_receiver import OtlpReceiver
from tests.server.processes import ServeProcess, ThreadedApp

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]
TOKEN = "e2e-service-token"

POLICY = """\
version: 1
name: e2e-service
permissions:
  deny:
    - Bash(rm:*)
  allow:
    - Bash(touch:*)
    - Bash(echo:*)
"""


def bash(command: str, when: str, times: int = 0) -> dict[str, Any]:
    return {
        "when": when,
        "times": times,
        "text": "ok",
        "tool_use": [{"name": "Bash", "input": {"command": command}}],
        "usage": {"input_tokens": 1200, "output_tokens": 42},
    }


TOOL_SCENARIO = {
    "responses": [
        bash("touch made.txt", "prompt"),
        bash("rm victim.txt", "tool_result", times=1),
        {"when": "tool_result", "text": "All done.", "stop_reason": "end_turn"},
    ]
}


@pytest.fixture
def policy(sandbox: Sandbox) -> str:
    path = sandbox.home / "policy.yaml"
    path.write_text(POLICY)
    return str(path)


def serve_env(sandbox: Sandbox, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ANTHROPIC_"))}
    env.update(
        AGENT_GATEWAY_HOME=str(sandbox.gateway_home),
        AGENT_GATEWAY_TOKEN=TOKEN,
        AGENT_GATEWAY_CLAUDE_PROJECTS=str(sandbox.projects_root),
        OTEL_TRACES_EXPORTER="none",
        OTEL_BSP_SCHEDULE_DELAY="100",
    )
    env.update(extra)
    return env


def otlp_env(receiver: OtlpReceiver, replica: str = "a") -> dict[str, str]:
    return {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_RESOURCE_ATTRIBUTES": f"replica={replica}",
    }


def run_claude(sandbox: Sandbox, prompt: str, settings: dict[str, Any], *args: str) -> Any:
    env = sandbox.env(
        AGENT_GATEWAY_TOKEN=TOKEN, ANTHROPIC_CUSTOM_HEADERS=f"X-Agent-Gateway-Token: {TOKEN}"
    )
    return claude_run(
        sandbox,
        prompt,
        "--settings",
        json.dumps(settings),
        "--allowedTools",
        "Bash",
        *args,
        env=env,
    )


def tool_result_text(out: Any) -> str:
    return "\n".join(str(block.get("content")) for block in out.tool_results())


# --- the whole path: decisions, proxy, trace, compaction, then the gateway goes away ---------
def test_bare_claude_code_through_the_service(
    sandbox: Sandbox, scripted: Scripted, policy: str
) -> None:
    upstream = scripted(TOOL_SCENARIO)
    (sandbox.cwd / "victim.txt").write_text("precious")
    with OtlpReceiver() as receiver:
        gateway = ServeProcess(
            [policy],
            upstream.url,
            serve_env(sandbox, **otlp_env(receiver)),
            log=sandbox.home / "serve.log",
        )
        with gateway:
            settings = gateway_settings(gateway.url)
            out = run_claude(sandbox, "tidy up", settings)
            assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
            # decided by the policy: the allowed touch ran, the denied rm did not
            assert (sandbox.cwd / "made.txt").exists()
            assert (sandbox.cwd / "victim.txt").read_text() == "precious"
            assert "rm" in tool_result_text(out) and "deny" in tool_result_text(out).lower()
            # every model call went through the proxy
            assert len(upstream.requests) >= 3
            audit = [
                json.loads(line)
                for line in (sandbox.gateway_home / "audit.jsonl").read_text().splitlines()
            ]
            decisions = [r for r in audit if "event" not in r]
            assert sorted(r["decision"] for r in decisions) == ["allow", "deny"]
            # every other hook request is recorded as deciding nothing
            observed = [r for r in audit if "event" in r]
            assert observed and {r["decision"] for r in observed} == {"none"}
            assert {"PostToolUse", "SessionEnd"} <= {r["event"] for r in observed}
            sid = out.session_id

            # compaction through the PreCompact http hook: archived by the service
            compact = run_claude(sandbox, "/compact", settings, "--resume", sid)
            assert compact.returncode == 0, compact.stderr[-2000:]
            listing = gateway_cli(
                sandbox,
                "archive",
                "list",
                "--session",
                sid,
                env=serve_env(sandbox, PYTHONPATH=str(Path(__file__).parents[2])),
            )
            assert listing.returncode == 0 and sid in listing.stdout, listing.stderr

            spans = receiver.wait_for(
                lambda s: (
                    any(x["name"].startswith("invoke_agent") for x in s)
                    and sum(x["name"] == "execute_tool Bash" for x in s) >= 2
                ),
                timeout=15,
            )
        # turns and tools in one trace, every span under the session's root
        session_spans = [s for s in spans if s["attributes"].get("gen_ai.conversation.id") == sid]
        assert len({s["trace_id"] for s in session_spans}) == 1
        # one root id; each `claude -p` process ends with SessionEnd, so a resumed session
        # reports its root again (same id, later end)
        roots = [s for s in session_spans if s["parent_span_id"] is None]
        assert {(r["name"], r["span_id"]) for r in roots} == {
            ("invoke_agent claude-code", roots[0]["span_id"])
        }
        # one tree: turns under the root, chats and tools under their turn
        ids = {s["span_id"]: s for s in session_spans}
        assert all(s["parent_span_id"] in ids for s in session_spans if s not in roots)
        assert all(
            ids[s["parent_span_id"]]["name"] == "turn"
            for s in session_spans
            if s["name"].startswith(("chat", "execute_tool"))
            and ids[s["parent_span_id"]]["name"] != "compaction"
        )
        chats = [s for s in session_spans if s["name"].startswith("chat")]
        assert len(chats) >= 3
        assert all(c["attributes"]["gen_ai.usage.output_tokens"] == 42 for c in chats[:3])
        tools = {
            s["attributes"]["gen_ai.tool.call.id"]: s
            for s in session_spans
            if s["name"] == "execute_tool Bash"
        }
        decisions = sorted(t["attributes"]["agent_gateway.policy.decision"] for t in tools.values())
        assert decisions == ["allow", "deny"]
        assert any(s["name"] == "compaction" for s in spans)

    # the gateway is stopped: the same session cannot run any tool
    (sandbox.cwd / "made.txt").unlink()
    down = gateway_settings(gateway.url, proxy=False)
    sandbox.base_url = upstream.url  # the model is still reachable; only the hooks are not
    blocked = run_claude(sandbox, "tidy up again", down, "--resume", sid)
    assert not (sandbox.cwd / "made.txt").exists()
    assert 'onFailure is "block"' in tool_result_text(blocked)


# --- each failure mode of a reachable but broken gateway blocks the tool --------------------
def misbehaving_app(mode: str) -> web.Application:
    async def hook(request: web.Request) -> web.Response:
        await request.read()
        if mode == "500":
            return web.json_response({"error": "boom"}, status=500)
        if mode == "invalid-json":
            return web.Response(text="{this is not json", content_type="application/json")
        await asyncio.sleep(8)  # "timeout": longer than the handler's timeout
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/hooks/{event}", hook)
    return app


@pytest.mark.parametrize("mode", ["500", "invalid-json", "timeout"])
def test_broken_gateway_blocks(sandbox: Sandbox, scripted: Scripted, mode: str) -> None:
    scripted({"responses": [bash("touch made.txt", "prompt", times=1)], "default": {"text": "ok"}})
    with ThreadedApp(misbehaving_app(mode)) as broken:
        settings = gateway_settings(broken.url, proxy=False, timeout_s=3)
        out = run_claude(sandbox, "make a file", settings)
    assert not (sandbox.cwd / "made.txt").exists()
    assert 'onFailure is "block"' in tool_result_text(out)


# --- two replicas behind a round-robin: one coherent trace -----------------------------------
def round_robin(backends: list[str]) -> web.Application:
    """A test load balancer: each request goes to the next backend (bodies buffered)."""
    turn = itertools.cycle(backends)

    async def forward(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host",)}
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                request.method, next(turn) + request.path_qs, data=body, headers=headers
            ) as upstream,
        ):
            data = await upstream.read()
            drop = ("content-length", "transfer-encoding", "content-encoding", "connection")
            out = {k: v for k, v in upstream.headers.items() if k.lower() not in drop}
            return web.Response(status=upstream.status, body=data, headers=out)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


def test_two_replicas_one_trace(sandbox: Sandbox, scripted: Scripted, policy: str) -> None:
    upstream = scripted(TOOL_SCENARIO)
    (sandbox.cwd / "victim.txt").write_text("precious")
    with OtlpReceiver() as receiver:
        a = ServeProcess([policy], upstream.url, serve_env(sandbox, **otlp_env(receiver, "a")))
        b = ServeProcess([policy], upstream.url, serve_env(sandbox, **otlp_env(receiver, "b")))
        with a, b, ThreadedApp(round_robin([a.url, b.url])) as lb:
            out = run_claude(sandbox, "tidy up", gateway_settings(lb.url))
            assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
            sid = out.session_id
            spans = receiver.wait_for(
                lambda s: (
                    any(x["name"].startswith("invoke_agent") for x in s)
                    and sum(x["name"] == "execute_tool Bash" for x in s) >= 2
                    and sum(x["name"].startswith("chat") for x in s) >= 3
                ),
                timeout=15,
            )
    assert (sandbox.cwd / "victim.txt").exists()
    ours = [s for s in spans if s["attributes"].get("gen_ai.conversation.id") == sid]
    assert {s["resource"]["replica"] for s in ours} == {"a", "b"}
    assert len({s["trace_id"] for s in ours}) == 1
    roots = {s["span_id"] for s in ours if s["parent_span_id"] is None}
    assert len(roots) == 1
    # without a shared trace state each replica links what it saw: still one connected tree
    # (tests/e2e/test_trace_parity.py: with Redis, the same tree as `run`)
    ids = {s["span_id"] for s in ours}
    assert all(s["parent_span_id"] in ids for s in ours if s["parent_span_id"] is not None)


@pytest.fixture(autouse=True)
def _no_leaks() -> Iterator[None]:
    yield


# --- the settings `agent-gateway settings` prints, with only the token exported --------------
def printed_settings(url: str, policy: str, path: Path) -> Path:
    printed = print_settings(url, path, policy)
    assert "export AGENT_GATEWAY_TOKEN" in printed.stderr
    return path


def session_env(sandbox: Sandbox, token: str | None) -> dict[str, str]:
    """A user's shell: their own Anthropic key, the gateway token (None: not exported),
    nothing else of ours (no ANTHROPIC_CUSTOM_HEADERS, no ANTHROPIC_BASE_URL: the settings
    carry it), and Claude Code's default retries."""
    env = sandbox.env()
    env.pop("AGENT_GATEWAY_TOKEN", None)
    if token is not None:
        env["AGENT_GATEWAY_TOKEN"] = token
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_CUSTOM_HEADERS", "CLAUDE_CODE_MAX_RETRIES"):
        env.pop(name, None)
    return env


def test_printed_settings_work_with_only_the_token_exported(
    sandbox: Sandbox, scripted: Scripted, policy: str
) -> None:
    upstream = scripted(TOOL_SCENARIO)
    (sandbox.cwd / "victim.txt").write_text("precious")
    with OtlpReceiver() as receiver:
        env = serve_env(sandbox, **otlp_env(receiver))
        with ServeProcess([policy], upstream.url, env, log=sandbox.home / "serve.log") as gw:
            settings = printed_settings(gw.url, policy, sandbox.home / "settings.json")
            out = claude_run(
                sandbox, "tidy up", "--settings", str(settings), "--allowedTools", "Bash",
                env=session_env(sandbox, TOKEN),
            )
            assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
            sid = out.session_id
            spans = receiver.wait_for(
                lambda s: sum(
                    x["name"].startswith("chat")
                    and x["attributes"].get("gen_ai.conversation.id") == sid
                    for x in s
                ) >= 3,
                timeout=15,
            )
    # tools decided by the gateway
    assert (sandbox.cwd / "made.txt").exists()
    assert (sandbox.cwd / "victim.txt").read_text() == "precious"
    audit = [json.loads(line)
             for line in (sandbox.gateway_home / "audit.jsonl").read_text().splitlines()]
    decided = sorted(r["decision"] for r in audit if "event" not in r and r["session_id"] == sid)
    assert decided == ["allow", "deny"]
    # model calls went through the proxy, with the user's key and never the gateway token
    assert len(upstream.requests) >= 3
    for request in upstream.requests:
        headers = {k.lower(): v for k, v in request.headers.items()}
        assert headers.get("x-api-key") == "scripted-test-key"
        assert TOKEN not in json.dumps(headers)
    chats = [s for s in spans if s["name"].startswith("chat")
             and s["attributes"].get("gen_ai.conversation.id") == sid]
    assert all(c["attributes"]["gen_ai.usage.output_tokens"] == 42 for c in chats)


def test_a_wrong_token_fails_the_session_fast_naming_the_token(
    sandbox: Sandbox, scripted: Scripted, policy: str
) -> None:
    upstream = scripted(TOOL_SCENARIO)
    with ServeProcess([policy], upstream.url, serve_env(sandbox)) as gw:
        settings = printed_settings(gw.url, policy, sandbox.home / "settings.json")
        for token in ("not-the-token", "", None):
            started = time.monotonic()
            out = claude_run(
                sandbox, "tidy up", "--settings", str(settings),
                env=session_env(sandbox, token), timeout=120,
            )
            took = time.monotonic() - started
            assert out.returncode != 0
            assert took < 10, took
            message = str(out.result.get("result"))
            assert "403" in message and "Export AGENT_GATEWAY_TOKEN" in message, message
    assert upstream.requests == []  # nothing reached the model


# --- a session whose gateway is gone fails fast, naming the gateway -----------------------------
def test_a_stopped_gateway_fails_the_session_within_10_seconds(
    sandbox: Sandbox, scripted: Scripted, policy: str
) -> None:
    """What a developer sees after `agent-gateway settings > .claude/settings.local.json` once
    the gateway is stopped: with Claude Code's default retries, about 3 minutes of silence."""
    upstream = scripted({"responses": [{"text": "Hello.", "times": 0}]})
    project = sandbox.cwd
    (project / ".claude").mkdir()
    env = session_env(sandbox, TOKEN)
    with ServeProcess([policy], upstream.url, serve_env(sandbox)) as gw:
        url = gw.url
        printed_settings(url, policy, project / ".claude" / "settings.local.json")
        # Claude Code resolves api.anthropic.com before it reads project settings; this machine
        # has no DNS, so that lookup alone takes ~18 s here. The same URL in the environment
        # avoids that offline artifact and changes nothing else.
        env["ANTHROPIC_BASE_URL"] = url
        up = subprocess.run([str(CLAUDE_BIN), "-p", "hi"], cwd=project, env=env,
                            capture_output=True, text=True, timeout=120, check=False)
        assert (up.returncode, up.stdout.strip()) == (0, "Hello."), up.stderr
    started = time.monotonic()
    down = subprocess.run([str(CLAUDE_BIN), "-p", "hi"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    took = time.monotonic() - started
    assert down.returncode != 0
    assert took < 10, f"the session took {took:.1f} s to fail"
    assert "Connection refused" in down.stdout, down.stdout
    assert f"{url}/hooks/SessionEnd" in down.stderr, down.stderr  # the gateway, by its URL
