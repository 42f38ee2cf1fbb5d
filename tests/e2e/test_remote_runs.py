"""POST /v1/runs: a caller starts the real agent on the gateway and reads NDJSON back; its
policy layers come from its token."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from tests.e2e import forgery
from tests.e2e.harness import Sandbox, as_the_same_user, post_ndjson
from tests.redis_server import RedisServer
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


SERVICE_SECRETS = {
    "TEAM_A_TOKEN": "tok-team-a-7f3e9c1d5b",
    "TEAM_B_TOKEN": "tok-team-b-2a8d4e6f0c",
    "AGENT_GATEWAY_METRICS_TOKEN": "scrape-4c1e7a9b3d5f",
    "AWS_SECRET_ACCESS_KEY": "aws-archive-9d2b6f8e1a",
}
REDIS_PASSWORD = "redis-pass-5e3a1c7b9d"


def tool_output(messages: list[dict[str, Any]]) -> str:
    return "\n".join(
        str(b["content"]) for m in messages if m.get("type") == "user"
        for b in m["message"]["content"] if b.get("type") == "tool_result"
    )


SCAN = """printenv
echo SCANNED
cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' |
  grep -E 'TOKEN|REDIS|AWS_|KEY_FILE' | sort -u
"""


def test_a_remote_runs_agent_sees_none_of_the_services_secrets(
    sandbox: Sandbox, scripted: Scripted, tmp_path: Path
) -> None:
    scripted({"responses": [
        {"when": "prompt", "text": "looking", "times": 0,
         "tool_use": [{"name": "Bash", "input": {"command": "sh scan.sh"}}]},
        {"when": "tool_result", "text": "done", "times": 0},
    ]})
    org = tmp_path / "org.yaml"
    org.write_text("version: 1\nname: org\npermissions:\n  allow:\n    - Bash(sh scan.sh)\n")
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(
        "tokens:\n  - {token_env: TEAM_A_TOKEN, name: team-a}\n"
        "  - {token_env: TEAM_B_TOKEN, name: team-b}\n"
    )
    key_file = tmp_path / "audit.key"
    key_file.write_text("0123456789abcdef0123456789abcdef0123456789\n")
    work = sandbox.cwd / "team-a"
    work.mkdir()
    (work / "scan.sh").write_text(SCAN)
    (tmp_path / "redis").mkdir()

    with RedisServer(tmp_path / "redis", password=REDIS_PASSWORD) as redis:
        env = sandbox.env(
            AGENT_GATEWAY_TOKENS_FILE=str(tokens), AGENT_GATEWAY_REDIS_URL=redis.url,
            AGENT_GATEWAY_AUDIT_KEY_FILE=str(key_file), **SERVICE_SECRETS,
        )
        with ServeProcess([str(org)], upstream="http://127.0.0.1:9", env=env,
                          args=["--runs-root", str(sandbox.cwd)],
                          wrapper=as_the_same_user()) as gateway:
            status, lines = post_run(gateway.url, SERVICE_SECRETS["TEAM_A_TOKEN"], {
                "prompt": "show the environment", "cwd": str(work), "allowed_tools": ["Bash"],
            })

    assert status == 200 and lines[-1]["exit_code"] == 0, lines[-1]
    printed = tool_output(lines)
    # It ran, with what Claude Code needs and its own configuration.
    assert "PATH=" in printed and f"HOME={sandbox.home}" in printed
    assert f"ANTHROPIC_BASE_URL={sandbox.base_url}" in printed
    # The scan read the environment of the processes it may read (Claude Code's among them),
    # serve's, its forkserver's and its decision workers' not among them.
    scanned = printed.split("SCANNED", 1)[1]
    assert "AGENT_GATEWAY_RUN_HOOK_TOKEN=" in scanned, printed
    for name, secret in SERVICE_SECRETS.items():
        assert secret not in printed, f"{name}'s value reached the agent"
    assert REDIS_PASSWORD not in printed
    for name in ("AGENT_GATEWAY_TOKENS_FILE", "AGENT_GATEWAY_AUDIT_KEY_FILE",
                 "AGENT_GATEWAY_REDIS_URL", str(key_file), str(tokens)):
        assert name not in printed


SLOW_DECISION = '''\
"""A decision made slow on purpose: a Bash command naming `slow-decision` keeps the
deciding process busy for a second of CPU, as a long analysis would."""
import os
import time

import gateway.policy.evaluate as evaluate

_decide = evaluate.decide


def decide(policy, call, **kwargs):
    if "slow-decision" in str(call.tool_input.get("command", "")):
        mark = os.environ["SLOW_DECISION_MARK"]
        open(mark + ".start", "w").close()
        end = time.process_time() + 1.0
        while time.process_time() < end:
            pass
        open(mark + ".end", "w").close()
    return _decide(policy, call, **kwargs)


evaluate.decide = decide
'''


def slow_run(sandbox: Sandbox, scripted: Scripted, tmp_path: Path, command: str
             ) -> tuple[dict[str, str], Path, Path]:
    """A remote run whose one Bash call takes a second to decide: serve's environment, its
    policy, and the path the decision marks its start and end at."""
    scripted({"responses": [
        {"when": "prompt", "text": "working", "times": 0,
         "tool_use": [{"name": "Bash", "input": {"command": command}}]},
        {"when": "tool_result", "text": "done", "times": 0},
    ]})
    org = tmp_path / "org.yaml"
    org.write_text(ORG.replace("touch:*", "echo:*"))
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_DECISION)
    mark = tmp_path / "decision"
    return sandbox.env(PYTHONPATH=str(site), SLOW_DECISION_MARK=str(mark)), org, mark


def audit_log(sandbox: Sandbox) -> list[dict[str, Any]]:
    return [json.loads(line) for line in
            (sandbox.gateway_home / "audit.jsonl").read_text().splitlines()]


def test_a_slow_decision_of_a_remote_run_leaves_serve_responsive(
    sandbox: Sandbox, scripted: Scripted, tmp_path: Path
) -> None:
    env, org, mark = slow_run(sandbox, scripted, tmp_path, "echo slow-decision")
    outcome: list[tuple[int, list[dict[str, Any]]]] = []

    with ServeProcess([str(org)], upstream="http://127.0.0.1:9", env=env,
                      args=["--runs-root", str(sandbox.cwd), "--decision-budget", "10"]
                      ) as gateway:
        run = threading.Thread(target=lambda: outcome.append(post_run(gateway.url, "", {
            "prompt": "go", "cwd": str(sandbox.cwd), "allowed_tools": ["Bash"],
        })))
        run.start()
        deadline = time.monotonic() + 60
        while not Path(f"{mark}.start").exists():
            assert time.monotonic() < deadline and run.is_alive(), outcome
            time.sleep(0.01)
        latencies = []
        while not Path(f"{mark}.end").exists() and time.monotonic() < deadline:
            started = time.perf_counter()
            with urllib.request.urlopen(gateway.url + "/healthz", timeout=30) as response:
                assert response.status == 200
            latencies.append(time.perf_counter() - started)
            time.sleep(0.02)
        run.join(timeout=60)

    status, lines = outcome[0]
    assert status == 200 and lines[-1]["exit_code"] == 0, lines[-1]
    assert latencies, "the decision ended before /healthz was asked"
    # Decided on serve's loop, /healthz waited the whole second out.
    assert max(latencies) < 0.1, sorted(latencies)[-3:]
    assert [(r["decision"], r["input"]["command"]) for r in audit_log(sandbox)] == [
        ("allow", "echo slow-decision")
    ]


def test_a_remote_runs_decision_past_the_budget_is_a_recorded_deny(
    sandbox: Sandbox, scripted: Scripted, tmp_path: Path
) -> None:
    env, org, mark = slow_run(sandbox, scripted, tmp_path, "echo slow-decision > ran.txt")
    with ServeProcess([str(org)], upstream="http://127.0.0.1:9", env=env,
                      args=["--runs-root", str(sandbox.cwd), "--decision-budget", "0.3"]
                      ) as gateway:
        status, lines = post_run(gateway.url, "", {
            "prompt": "go", "cwd": str(sandbox.cwd), "allowed_tools": ["Bash"],
        })

    assert status == 200 and lines[-1]["exit_code"] == 0, lines[-1]
    assert Path(f"{mark}.start").exists() and not Path(f"{mark}.end").exists()  # killed
    assert not (sandbox.cwd / "ran.txt").exists()
    assert "decision budget" in tool_output(lines)
    (record,) = audit_log(sandbox)
    assert (record["decision"], record["rule_id"]) == ("deny", "gateway.fail-closed")
    assert "decision budget" in record["reason"]


def test_a_remote_runs_agent_cannot_post_a_decision_of_its_own(
    sandbox: Sandbox, scripted: Scripted, tmp_path: Path
) -> None:
    (sandbox.cwd / "forge.py").write_text(forgery.SCRIPT)
    scripted({"responses": [
        {"when": "prompt", "text": "working", "times": 0,
         "tool_use": [{"name": "Bash", "input": {"command": "python3 forge.py"}}]},
        {"when": "tool_result", "text": "done", "times": 0},
    ]})
    org = tmp_path / "org.yaml"
    org.write_text("version: 1\nname: org\npermissions:\n  allow:\n    - Bash(python3 forge.py)\n")
    log = tmp_path / "serve.log"
    with ServeProcess([str(org)], upstream="http://127.0.0.1:9", env=sandbox.env(), log=log,
                      args=["--runs-root", str(sandbox.cwd)]) as gateway:
        status, lines = post_run(gateway.url, "", {
            "prompt": "go", "cwd": str(sandbox.cwd), "allowed_tools": ["Bash"],
        })

    assert status == 200 and lines[-1]["exit_code"] == 0, lines[-1]
    assert forgery.forge_status(tool_output(lines)) == 403, tool_output(lines)
    records = audit_log(sandbox)
    assert forgery.MARK not in json.dumps(records)
    assert [r["input"]["command"] for r in records] == ["python3 forge.py"]
    assert "not the run's Claude Code" in log.read_text()
