"""What a real backend shows: a session through `run` and one behind `serve`, traced into Arize
Phoenix and read back through Phoenix's own client.

Phoenix is not a dependency of the gateway: it lives in its own virtualenv,
AGENT_GATEWAY_PHOENIX_VENV or the one `tests/interop/phoenix/check_phoenix.py` installs
(~/.cache/agent-gateway/interop/phoenix-venv). Without it the test is skipped and says so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.server.claude_settings import gateway_settings
from tests.e2e.harness import Sandbox, claude_run, gateway_run
from tests.interop.phoenix import check_phoenix as phoenix
from tests.server.processes import ServeProcess

pytestmark = pytest.mark.e2e
VENV = Path(os.environ.get("AGENT_GATEWAY_PHOENIX_VENV") or phoenix.DEFAULT_VENV)


@pytest.fixture(scope="module")
def phoenix_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not (VENV / "bin" / "phoenix").exists():
        pytest.skip(
            f"arize-phoenix is not installed in {VENV}: `python tests/interop/phoenix/"
            "check_phoenix.py` installs it from PyPI (or set AGENT_GATEWAY_PHOENIX_VENV)"
        )
    workdir = tmp_path_factory.mktemp("phoenix")
    proc, url = phoenix.start_phoenix(VENV, workdir / "data", workdir / "phoenix.log")
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(workdir, ignore_errors=True)


def env_for(sandbox: Sandbox, url: str) -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": url,  # all the docs ask for, with the project
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={phoenix.PROJECT}",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }


def shown(url: str, session: str) -> list[dict[str, Any]]:
    return phoenix.query(VENV / "bin" / "python", url, session)


def check(spans: list[dict[str, Any]], result: dict[str, Any]) -> None:
    failed = [(name, detail) for name, ok, detail in phoenix.check(spans, result) if not ok]
    assert not failed, failed
    attr = phoenix._attr
    llm = [s for s in spans if s.get("span_kind") == "LLM"]
    tools = [s for s in spans if s.get("span_kind") == "TOOL"]
    # the input and output columns of LLM and TOOL spans
    assert all(json.loads(attr(s, "input.value")) and attr(s, "output.value") for s in llm)
    assert all(attr(s, "input.value") for s in tools)
    results = sorted(str(attr(s, "output.value")) for s in tools if attr(s, "output.value"))
    assert results == ["listed"], results
    # the cost Phoenix shows adds up to Claude Code's
    costs = sum(float(attr(s, "gen_ai.usage.cost") or 0) for s in llm)
    assert costs == pytest.approx(result["total_cost_usd"], abs=1e-6)


def test_phoenix_shows_the_same_session_from_run_and_from_serve(
    phoenix_url: str, sandbox: Sandbox, scripted: Any
) -> None:
    policy = sandbox.home / "policy.yaml"
    policy.write_text(phoenix.POLICY)
    prompt = "clean up the build"
    scripted(phoenix.SCENARIO)
    env = sandbox.env(**env_for(sandbox, phoenix_url))
    del env["OTEL_TRACES_EXPORTER"]
    out = gateway_run(sandbox, prompt, "--policy", str(policy), "--allowed-tools", "Bash", env=env)
    assert out.results, out.stderr[-2000:]
    assert "404" not in out.stderr and "unreachable" not in out.stderr, out.stderr
    check(shown(phoenix_url, out.session_id), out.result)

    upstream = scripted(phoenix.SCENARIO)
    serve_env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ANTHROPIC_"))}
    serve_env.update(
        AGENT_GATEWAY_HOME=str(sandbox.gateway_home),
        AGENT_GATEWAY_CLAUDE_PROJECTS=str(sandbox.projects_root),
        **env_for(sandbox, phoenix_url),
    )
    serve_env.pop("AGENT_GATEWAY_TOKEN", None)
    with ServeProcess([str(policy)], upstream.url, serve_env, log=sandbox.home / "serve.log") as gw:
        settings = gateway_settings(gw.url, with_token=False)
        served = claude_run(
            sandbox, prompt, "--settings", json.dumps(settings), "--allowedTools", "Bash"
        )
        assert served.results, served.stderr[-2000:]
    check(shown(phoenix_url, served.session_id), served.result)
