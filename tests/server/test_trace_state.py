"""The trace state's contract, the same in memory and in Redis (what replicas share)."""

from __future__ import annotations

import pytest

from gateway.server.trace_state import RedisTraceState
from gateway.telemetry.fact_state import MemoryTraceState, TraceState
from tests.server.processes import free_port


@pytest.fixture(params=["memory", "redis"])
def state(request: pytest.FixtureRequest) -> TraceState:
    if request.param == "memory":
        return MemoryTraceState()
    return RedisTraceState(request.getfixturevalue("redis_url"))


def test_fields_counters_and_one_winner(state: TraceState) -> None:
    state.set("s1", {"turn:m1": '{"tools": []}', "tool-turn:t1": "m1"})
    assert state.get("s1", "tool-turn:t1") == "m1"
    assert state.get("s2", "tool-turn:t1") is None  # sessions stay apart
    assert state.get_all("s1") == {"turn:m1": '{"tools": []}', "tool-turn:t1": "m1"}
    assert state.set_new("s1", "root-open", "1") is True
    assert state.set_new("s1", "root-open", "1") is False
    assert state.remove("s1", "root-open") is True
    assert state.remove("s1", "root-open") is False  # exactly one closer
    assert state.add("s1", "turns:", 1) == 1
    assert state.add("s1", "turns:", 1) == 2
    assert state.add("s1", "cost", 0.25) == pytest.approx(0.25)
    assert state.add("s1", "cost", 0.5) == pytest.approx(0.75)


def test_sessions_silent_since_a_time(state: TraceState) -> None:
    state.touch("quiet", 1_000)
    state.touch("busy", 1_000)
    state.touch("busy", 5_000)
    assert state.active_before(2_000) == ["quiet"]
    state.forget_activity("quiet")
    assert state.active_before(10_000) == ["busy"]


def test_an_unreachable_redis_is_an_os_error() -> None:
    state = RedisTraceState(f"redis://:secret@127.0.0.1:{free_port()}/0", timeout_s=0.5)
    with pytest.raises(OSError, match="redis") as raised:
        state.get("s", "f")
    assert "secret" not in str(raised.value)
