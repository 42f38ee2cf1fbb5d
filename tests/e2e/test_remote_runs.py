"""POST /v1/runs: a caller starts the real agent on the gateway and reads NDJSON back; its
policy layers come from its token."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.testing import ScriptedServer
from tests.e2e.harness import Sandbox, post_ndjson
from tests.server.processes import ServeProcess

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]

ORG = "version: 1\nname: org\npermissions:\n  allow:\n    - Bash(touch:*)\n"
TEAM_A = (
    "version: 1\nname: team-a\nrules:\n  - id: team-a-no-touch\n"
    "    reason: Team A may not create files here.\n    tool: Bash\n    command: 'touch:*'\n"
)


def post_run(url: str, token: str, body: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    return post_ndjson(url, token, "/v1/runs", body)


def test_remote_run_streams_messages_under_the_callers_policy(
    sandbox: Sandbox, scripted: Scripted, tmp_path: Path
) -> None:
    server = scripted(
        {
            "responses": [
                {
                    "when": "prompt",
                    "text": "creating",
                    "times": 0,
                    "tool_use": [{"name": "Bash", "input": {"command": "touch remote.txt"}}],
                },
                {"when": "tool_result", "text": "done", "times": 0},
            ]
        }
    )
    org, team_a = tmp_path / "org.yaml", tmp_path / "team-a.yaml"
    org.write_text(ORG)
    team_a.write_text(TEAM_A)
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(
        "tokens:\n  - {token: tok-plain, name: plain}\n"
        f"  - {{token: tok-team-a, name: team-a, policies: [{team_a}]}}\n"
    )
    env = sandbox.env(AGENT_GATEWAY_TOKENS_FILE=str(tokens))
    work_plain, work_team = sandbox.cwd / "plain", sandbox.cwd / "team"
    work_plain.mkdir()
    work_team.mkdir()

    with ServeProcess(
        [str(org)], upstream="http://127.0.0.1:9", env=env, args=["--runs-root", str(sandbox.cwd)]
    ) as gateway:
        status, plain = post_run(
            gateway.url, "tok-plain", {"prompt": "make a file", "cwd": str(work_plain)}
        )
        _, team = post_run(
            gateway.url, "tok-team-a", {"prompt": "make a file", "cwd": str(work_team)}
        )
        unauthorized, _ = post_run(gateway.url, "wrong", {"prompt": "x"})
        bad, error = post_run(gateway.url, "tok-plain", {"prompt": "x", "settings": "{}"})

    assert status == 200
    assert plain[0]["type"] == "system" and plain[-2]["type"] == "result"
    assert plain[-1]["type"] == "gateway_exit" and plain[-1]["exit_code"] == 0
    assert (work_plain / "remote.txt").exists()  # org allows touch
    assert not (work_team / "remote.txt").exists()  # team A's layer denies it
    team_results = [
        b
        for m in team
        if m.get("type") == "user"
        for b in m["message"]["content"]
        if b.get("type") == "tool_result"
    ]
    assert "Team A may not create files here" in team_results[0]["content"]
    assert unauthorized == 401
    assert bad == 400 and "settings" in error[0]["error"]
    assert len(server.requests) == 4  # two runs, two model calls each
