"""The run's loopback hook endpoint: only the run's token, from the run's Claude Code's
process, is answered, and whatever cannot be answered is an error status (which Claude Code,
with onFailure: block, turns into a block)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

import pytest

from gateway.runner import peer_process
from gateway.runner.hook_endpoint import TOKEN_ENV, HookEndpoint


class Answers:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.seen: list[dict[str, Any]] = []

    async def pre_tool_use(self, data: dict[str, Any], tool_use_id: str | None = None) -> Any:
        if self.fail:
            raise RuntimeError("broken")
        self.seen.append(data)
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                       "permissionDecision": "deny"}}

    async def pre_tool_use_raw(self, data: dict[str, Any], raw: bytes) -> Any:
        assert json.loads(raw) == data
        return await self.pre_tool_use(data)

    async def pre_compact(self, data: dict[str, Any]) -> Any:
        return {"decision": "block", "reason": "r"}


def post(url: str, body: bytes, token: str | None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


async def exchange(answers: Answers, path: str, body: bytes, token: str | None = "") -> Any:
    loop = asyncio.get_running_loop()
    with HookEndpoint(answers, loop) as endpoint:  # type: ignore[arg-type]
        endpoint.admit(os.getpid())  # this process plays the run's Claude Code
        given = endpoint.token if token == "" else token
        return await asyncio.to_thread(post, endpoint.url + path, body, given)


POST_FROM_ANOTHER_PROCESS = """
import json, sys, urllib.error, urllib.request
request = urllib.request.Request(sys.argv[1], data=b'{"tool_name": "Bash"}', method="POST",
    headers={"Authorization": "Bearer " + sys.argv[2]})
try:
    print(urllib.request.urlopen(request, timeout=10).status)
except urllib.error.HTTPError as exc:
    print(exc.code)
"""


needs_proc = pytest.mark.skipif(not peer_process.supported(),
                                reason="which process holds a socket is read from /proc (Linux)")


@needs_proc
def test_the_runs_token_from_another_process_is_refused() -> None:
    async def forged() -> tuple[int, int]:
        answers = Answers()
        with HookEndpoint(answers, asyncio.get_running_loop()) as endpoint:  # type: ignore[arg-type]
            endpoint.admit(os.getpid())
            done = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "-c", POST_FROM_ANOTHER_PROCESS,
                 endpoint.url + "/hooks/PreToolUse", endpoint.token],
                capture_output=True, text=True, timeout=30, check=True,
            )
            own, _ = await asyncio.to_thread(
                post, endpoint.url + "/hooks/PreToolUse", b'{"tool_name": "Bash"}',
                endpoint.token,
            )
        assert answers.seen == [{"tool_name": "Bash"}]  # this process's call only
        return int(done.stdout), own

    assert asyncio.run(forged()) == (403, 200)


@needs_proc
def test_nothing_is_answered_before_claude_code_has_started() -> None:
    async def early() -> int:
        answers = Answers()
        with HookEndpoint(answers, asyncio.get_running_loop()) as endpoint:  # type: ignore[arg-type]
            status, _ = await asyncio.to_thread(
                post, endpoint.url + "/hooks/PreToolUse", b"{}", endpoint.token
            )
        assert answers.seen == []
        return status

    assert asyncio.run(early()) == 403


def test_the_runs_token_gets_the_answer() -> None:
    answers = Answers()
    status, body = asyncio.run(exchange(answers, "/hooks/PreToolUse", b'{"tool_name": "Bash"}'))
    assert status == 200 and body["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert answers.seen == [{"tool_name": "Bash"}]
    status, body = asyncio.run(exchange(answers, "/hooks/PreCompact", b"{}"))
    assert (status, body["decision"]) == (200, "block")


@pytest.mark.parametrize(("path", "body", "token", "expected"), [
    ("/hooks/PreToolUse", b"{}", None, 401),
    ("/hooks/PreToolUse", b"{}", "guessed", 401),
    ("/hooks/PostToolUse", b"{}", "", 404),
    ("/hooks/PreToolUse", b"not json", "", 400),
    ("/hooks/PreToolUse", b"[1]", "", 400),
])
def test_what_is_not_answered(path: str, body: bytes, token: str | None, expected: int) -> None:
    answers = Answers()
    status, _ = asyncio.run(exchange(answers, path, body, token))
    assert status == expected and answers.seen == []


def test_an_answer_that_raises_is_a_500() -> None:
    status, body = asyncio.run(exchange(Answers(fail=True), "/hooks/PreToolUse", b"{}"))
    assert status == 500 and "not answered" in body["error"]


def test_the_settings_block_on_failure_and_carry_the_token_by_variable() -> None:
    async def settings() -> dict[str, Any]:
        with HookEndpoint(Answers(), asyncio.get_running_loop()) as endpoint:  # type: ignore[arg-type]
            assert endpoint.token not in json.dumps(endpoint.settings())
            assert endpoint.env() == {TOKEN_ENV: endpoint.token}
            return endpoint.settings()

    got = asyncio.run(settings())
    for event in ("PreToolUse", "PreCompact"):
        (handler,) = got["hooks"][event][0]["hooks"]
        assert handler["onFailure"] == "block" and handler["type"] == "http"
        assert handler["headers"] == {"Authorization": f"Bearer ${TOKEN_ENV}"}
        assert handler["allowedEnvVars"] == [TOKEN_ENV]
    assert got["disableAllHooks"] is False
