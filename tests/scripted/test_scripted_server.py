import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from gateway.errors import ConfigError
from gateway.scripted import ScriptedServer, load_scenario
from gateway.scripted.scenario import classify_request


def post(url: str, body: dict[str, Any], session: str = "s1") -> tuple[int, bytes]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "X-Claude-Code-Session-Id": session},
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def sse_events(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]


USER = {"role": "user", "content": "hi"}
TOOL_RESULT = {
    "role": "user",
    "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}],
}


def test_streams_the_full_event_sequence_with_final_usage() -> None:
    scenario = {
        "responses": [
            {
                "thinking": "hmm",
                "text": "run",
                "usage": {
                    "input_tokens": 10,
                    "output_tokens": 77,
                    "cache_read_input_tokens": 5,
                    "cache_creation_input_tokens": 3,
                },
                "tool_use": [{"name": "Bash", "input": {"command": "ls"}}],
            }
        ]
    }
    with ScriptedServer(scenario) as server:
        status, raw = post(server.url + "/v1/messages", {"messages": [USER], "stream": True})
    events = sse_events(raw)
    assert status == 200
    assert [e["type"] for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[0]["message"]["usage"]["output_tokens"] == 1  # the placeholder
    assert events[0]["message"]["usage"]["cache_read_input_tokens"] == 5
    assert events[-2]["usage"]["output_tokens"] == 77
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    assert json.loads(events[9]["delta"]["partial_json"]) == {"command": "ls"}


def test_matches_by_kind_and_session_and_records() -> None:
    scenario = {
        "responses": [
            {"when": "tool_result", "text": "after tool"},
            {"when": "prompt", "text": "first", "times": 1},
        ],
        "default": {"text": "fallback"},
    }
    with ScriptedServer(scenario) as server:
        bodies = [
            post(server.url + "/v1/messages", {"messages": m}, session=s)[1]
            for m, s in (([USER], "a"), ([USER], "a"), ([USER], "b"), ([TOOL_RESULT], "a"))
        ]
        recorded = server.requests
    texts = [json.loads(b)["content"][0]["text"] for b in bodies]
    assert texts == ["first", "fallback", "first", "after tool"]
    assert [(r.session_id, r.kind, r.response_index) for r in recorded] == [
        ("a", "prompt", 1),
        ("a", "prompt", -1),
        ("b", "prompt", 1),
        ("a", "tool_result", 0),
    ]


def test_http_errors_and_count_tokens() -> None:
    scenario = {"responses": [{"status": 529}], "count_tokens": 321}
    with ScriptedServer(scenario) as server:
        status, body = post(server.url + "/v1/messages", {"messages": [USER]})
        _, counted = post(server.url + "/v1/messages/count_tokens", {"messages": [USER]})
    assert status == 529
    assert json.loads(body)["error"]["type"] == "overloaded_error"
    assert json.loads(counted) == {"input_tokens": 321}


def test_compaction_request_is_recognised() -> None:
    body = {
        "messages": [
            TOOL_RESULT,
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "Your task is to create a detailed summary of the conversation",
                    }
                ],
            },
        ]
    }
    assert classify_request(body, {}) == "compaction"
    assert classify_request({"messages": [USER]}, {"x-claude-code-agent-id": "a1"}) == "subagent"
    budget_note = {"role": "system", "content": [{"type": "text", "text": "USD budget: $0/$5"}]}
    assert classify_request({"messages": [TOOL_RESULT, budget_note]}, {}) == "tool_result"


def test_bad_scenario_is_one_line_error(tmp_path: Any) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("responses:\n  - when: sometimes\n    text: hi\n")
    with pytest.raises(ConfigError, match=r"s.yaml: responses.0.when: "):
        load_scenario(path)
    path.write_text("responses:\n  - {}\n")
    with pytest.raises(ConfigError, match="needs text, tool_use or thinking"):
        load_scenario(path)
