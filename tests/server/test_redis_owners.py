"""Session owners in Redis: replicas on different hosts (here: different state directories)
see the same owners."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gateway.server.owners import RedisSessionOwners
from tests.server.processes import ServeProcess, free_port


def test_first_claim_wins(redis_url: str) -> None:
    owners = RedisSessionOwners(redis_url)
    assert owners.claim("s-1", "team-a") == "team-a"
    assert owners.claim("s-1", "team-b") == "team-a"
    assert RedisSessionOwners(redis_url).claim("s-1", "team-b") == "team-a"
    assert owners.problem() == ""


def test_concurrent_claims_have_one_winner(redis_url: str) -> None:
    tenants = [f"team-{n}" for n in range(32)]
    with ThreadPoolExecutor(8) as pool:
        owners = list(pool.map(lambda t: RedisSessionOwners(redis_url).claim("c", t), tenants))
    assert len(set(owners)) == 1


def test_an_unreachable_redis_is_an_os_error_and_a_problem() -> None:
    owners = RedisSessionOwners(f"redis://:secret@127.0.0.1:{free_port()}/0", timeout_s=0.5)
    assert "not writable" in owners.problem() and "secret" not in owners.problem()
    with pytest.raises(OSError, match="redis"):
        owners.claim("s", "team-a")


def hook(url: str, token: str, session: str) -> int:
    body = {"hook_event_name": "PreToolUse", "session_id": session, "tool_name": "Bash",
            "tool_input": {"command": "ls"}, "tool_use_id": "t", "cwd": "/"}
    request = urllib.request.Request(
        url + "/hooks/PreToolUse", data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_replicas_on_different_hosts_share_owners_through_redis(
    redis_url: str, tmp_path: Path
) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("version: 1\nname: p\n")
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(
        "tokens:\n  - {token: tok-a, name: team-a}\n  - {token: tok-b, name: team-b}\n"
    )
    base = {**{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
            "AGENT_GATEWAY_TOKENS_FILE": str(tokens), "OTEL_TRACES_EXPORTER": "none"}
    homes = [tmp_path / "host-1", tmp_path / "host-2"]
    one, two = (
        ServeProcess([str(policy)], "http://127.0.0.1:9", {**base, "AGENT_GATEWAY_HOME": str(h)},
                     args=["--redis-url", redis_url])
        for h in homes
    )
    with one, two:
        assert hook(one.url, "tok-b", "s-b") == 200
        assert hook(two.url, "tok-a", "s-b") == 403
        assert hook(two.url, "tok-b", "s-b") == 200
    assert not (homes[0] / "sessions").exists() and not (homes[1] / "sessions").exists()
