"""Request bodies under limits: each refusal is a 4xx with a deny for PreToolUse, never a 500."""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

import pytest

from gateway.server.app import MAX_HOOK_BODY
from gateway.server.bodies import MAX_DEPTH, BodyError, decode, parse_object
from tests.server.conftest import AppFactory
from tests.server.test_app import decision_of, pre_tool_use

DEEP = b'{"tool_name":"Bash","tool_input":' + b"[" * 1200 + b"]" * 1200 + b"}"


def test_the_reported_deep_body_is_small() -> None:
    assert 2_400 <= len(DEEP) <= 2_500  # "a 2.4 KB body nested 1,200 deep"


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 999, 1200, 100_000])
def test_nesting_deeper_than_the_limit_is_refused(depth: int) -> None:
    data = b'{"a":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"
    with pytest.raises(BodyError, match="nested deeper") as refused:
        parse_object(data)
    assert refused.value.status == 400


def test_nesting_at_the_limit_and_brackets_in_strings_are_fine() -> None:
    data = b'{"a":' + b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1) + b"}"
    assert parse_object(data)
    text = json.dumps({"command": "echo '" + "[{" * 5000 + "'"}).encode()
    assert parse_object(text)["command"].startswith("echo")


def test_gzip_and_deflate_bodies_are_decoded() -> None:
    data = b'{"x": 1}'
    assert decode(gzip.compress(data), "gzip", 100) == data
    assert decode(zlib.compress(data), "deflate", 100) == data
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    assert decode(raw.compress(data) + raw.flush(), "deflate", 100) == data
    assert decode(data, "identity", 100) == data


@pytest.mark.parametrize(
    ("body", "encoding", "status", "message"),
    [
        (b"\x1f\x8b garbage", "gzip", 400, "invalid gzip"),
        (gzip.compress(b"{}")[:-6], "gzip", 400, "truncated"),
        (gzip.compress(b"{}") + b"trailing", "gzip", 400, "after the end"),
        (b"xx", "deflate", 400, "invalid deflate"),
        (gzip.compress(b" " * 5000), "gzip", 413, "once decompressed"),
        (b"{}", "br", 415, "unsupported Content-Encoding"),
        (b"{}", "gzip, gzip", 415, "unsupported Content-Encoding"),
    ],
)
def test_bad_encodings_are_refused(body: bytes, encoding: str, status: int, message: str) -> None:
    with pytest.raises(BodyError, match=message) as refused:
        decode(body, encoding, 4096)
    assert refused.value.status == status


# --- over HTTP: what Claude Code (or an attacker) gets back ---------------------------------
BOMB = gzip.compress(b" " * (50 * 1024 * 1024))


@pytest.mark.parametrize(
    ("data", "headers", "status"),
    [
        (DEEP, {}, 400),
        (b"\x1f\x8b garbage", {"Content-Encoding": "gzip"}, 400),
        (b"xx", {"Content-Encoding": "deflate"}, 400),
        (BOMB, {"Content-Encoding": "gzip"}, 413),
        (b"{}", {"Content-Encoding": "br"}, 415),
        (b"{}", {"Content-Encoding": "zstd"}, 415),
        (b"x" * (MAX_HOOK_BODY + 1), {}, 413),
        (b"[1, 2]", {}, 400),
        (b"\xff\xfe{", {}, 400),
    ],
)
async def test_each_limit_is_a_4xx_with_a_deny(
    make_client: AppFactory, data: bytes, headers: dict[str, str], status: int
) -> None:
    client, _ = await make_client()
    resp = await client.post("/hooks/PreToolUse", data=data, headers=headers)
    assert resp.status == status
    body = await resp.json()
    assert decision_of(body) == "deny"
    assert body["hookSpecificOutput"]["permissionDecisionReason"].startswith(
        "agent-gateway could not read the hook input"
    )
    # other events get the same status, without a decision
    other = await client.post("/hooks/PostToolUse", data=data, headers=headers)
    assert other.status == status and "hookSpecificOutput" not in await other.json()


async def test_compressed_hook_inputs_are_decided(make_client: AppFactory) -> None:
    client, _ = await make_client()
    for command, expected in (("rm -rf /tmp/x", "deny"), ("echo hi", "allow")):
        data = gzip.compress(json.dumps(pre_tool_use(command)).encode())
        resp = await client.post(
            "/hooks/PreToolUse", data=data, headers={"Content-Encoding": "gzip"}
        )
        assert resp.status == 200 and decision_of(await resp.json()) == expected


async def test_large_hook_input_is_parsed_off_the_loop_and_decided(
    make_client: AppFactory,
) -> None:
    client, _ = await make_client()
    body: dict[str, Any] = pre_tool_use("echo hi")
    body["tool_input"]["description"] = "x" * 200_000
    resp = await client.post("/hooks/PreToolUse", json=body)
    assert resp.status == 200 and decision_of(await resp.json()) == "allow"


async def test_run_bodies_have_the_same_limits(make_client: AppFactory, tmp_path: Any) -> None:
    client, _ = await make_client(runs_roots=[str(tmp_path)])
    resp = await client.post("/v1/runs", data=DEEP)
    assert resp.status == 400 and "nested deeper" in (await resp.json())["error"]
    resp = await client.post("/v1/runs", data=b"\x1f\x8bxx", headers={"Content-Encoding": "gzip"})
    assert resp.status == 400 and "invalid gzip" in (await resp.json())["error"]
