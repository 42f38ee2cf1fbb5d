"""Failure injection on PreCompact, at each step, from the command hook and the SDK callback
(the HTTP hook's are in tests/server/test_fail_closed.py).

With `require_archive`, a compaction whose transcript was not archived must be blocked,
whatever failed: the settings, the input, the archive, the render. Without it, compaction
goes on and the failure is said. After the archive, its off-host copy and tracing never
change the answer.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

import gateway.handlers.compact as compact
from gateway.compaction import CompactionSettings
from gateway.handlers.compact import run_pre_compact_hook
from gateway.handlers.engine import Engine
from gateway.hookio.wire import PreCompactOutput
from gateway.runner.callbacks import pre_compact_callback
from gateway.runner.hook_answers import HookAnswers
from tests.archive.conftest import Session
from tests.handlers.test_fail_closed import Boom, ExportSpy, TracerSpy, _raise


def strict(settings: CompactionSettings) -> CompactionSettings:
    return settings.model_copy(update={"require_archive": True})


def lenient(settings: CompactionSettings) -> CompactionSettings:
    """An org file that turned `require_archive` off."""
    return settings.model_copy(update={"require_archive": False})


def command_hook(raw: str, settings: Callable[[], tuple[CompactionSettings, str]]
                 ) -> tuple[bool, PreCompactOutput]:
    out, err = io.StringIO(), io.StringIO()
    code = run_pre_compact_hook(io.StringIO(raw), out, err, settings)
    if code == 2:
        assert err.getvalue().count("\n") == 1 and "Traceback" not in err.getvalue()
    output: PreCompactOutput = json.loads(out.getvalue())
    assert (code == 2) == (output.get("decision") == "block"), (code, output)
    return code == 2, output


async def sdk_callback(raw: str, settings: Callable[[], tuple[CompactionSettings, str]],
                       tracer: TracerSpy | None = None) -> tuple[bool, PreCompactOutput]:
    engine = Engine([])
    engine.compaction_settings = settings  # type: ignore[method-assign]
    callback = pre_compact_callback(HookAnswers(engine, tracer or TracerSpy()))
    output: Any = await callback(json.loads(raw) if raw.startswith("{") else {"bad": raw},
                                 None, {"signal": None})
    blocked = output.get("decision") == "block"
    if blocked:  # the reason reaches the stream as a system message too
        assert output["systemMessage"] == output["reason"]
    return blocked, output


async def answer(vantage: str, raw: str, settings: CompactionSettings | Exception,
                 tracer: TracerSpy | None = None) -> tuple[bool, PreCompactOutput]:
    def load() -> tuple[CompactionSettings, str]:
        if isinstance(settings, Exception):
            raise settings
        return settings, "ph"

    if vantage == "command hook":
        return command_hook(raw, load)
    return await sdk_callback(raw, load, tracer)


VANTAGES = ["command hook", "sdk callback"]


def hook_input(session: Session) -> str:
    return json.dumps(dict(session.request().raw))


@pytest.mark.parametrize("vantage", VANTAGES)
async def test_without_failures_the_transcript_is_archived(
    vantage: str, make_session: Callable[..., Session], settings: CompactionSettings
) -> None:
    blocked, output = await answer(vantage, hook_input(make_session()), strict(settings))
    assert not blocked and output == {}


@pytest.mark.parametrize("vantage", VANTAGES)
async def test_settings_that_cannot_be_loaded_block(
    vantage: str, make_session: Callable[..., Session]
) -> None:
    blocked, output = await answer(vantage, hook_input(make_session()), Boom("bad policy"))
    assert blocked and "cannot load compaction settings" in output["reason"]


@pytest.mark.parametrize("vantage", VANTAGES)
@pytest.mark.parametrize("required", [True, False])
async def test_unreadable_input_blocks_when_the_archive_is_required(
    vantage: str, required: bool, settings: CompactionSettings
) -> None:
    current = strict(settings) if required else lenient(settings)
    blocked, output = await answer(vantage, '{"hook_event_name": "PreCompact"}', current)
    assert blocked == required
    assert "bad hook input" in (output.get("reason") or output.get("systemMessage", ""))


@pytest.mark.parametrize("vantage", VANTAGES)
@pytest.mark.parametrize("required", [True, False])
async def test_an_archive_that_raises_blocks_when_required(
    vantage: str, required: bool, make_session: Callable[..., Session],
    settings: CompactionSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gateway.archive.archiver as archiver

    monkeypatch.setattr(archiver, "archive_session", _raise)
    current = strict(settings) if required else lenient(settings)
    blocked, output = await answer(vantage, hook_input(make_session()), current)
    assert blocked == required
    said = output.get("reason") or output.get("systemMessage", "")
    assert "injected failure second line" in said


@pytest.mark.parametrize("vantage", VANTAGES)
@pytest.mark.parametrize("required", [True, False])
async def test_a_render_that_raises_blocks_when_required(
    vantage: str, required: bool, make_session: Callable[..., Session],
    settings: CompactionSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compact, "render_pre_compact", _raise)
    current = strict(settings) if required else lenient(settings)
    blocked, output = await answer(vantage, hook_input(make_session()), current)
    assert blocked == required
    if required:
        assert "could not render its answer" in output["reason"]


async def test_a_failing_tracer_never_changes_the_answer(
    make_session: Callable[..., Session], settings: CompactionSettings, unwritable: str,
    caplog: pytest.LogCaptureFixture
) -> None:
    tracer = TracerSpy(fail=True)
    with caplog.at_level(logging.ERROR):
        archived = await answer("sdk callback", hook_input(make_session()), strict(settings),
                                tracer)
        failing = strict(settings).model_copy(update={"path": unwritable})
        refused = await answer("sdk callback", hook_input(make_session()), failing, tracer)
    assert archived == (False, {})
    assert refused[0] and "not writable" in refused[1]["reason"]
    assert "tracing a hook event failed" in caplog.text


async def test_an_sdk_callback_whose_engine_raises_blocks(
    make_session: Callable[..., Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Engine, "pre_compact", _raise)
    blocked, output = await sdk_callback(hook_input(make_session()),
                                         lambda: (CompactionSettings(), ""))
    assert blocked and "injected failure" in output["reason"]


def test_a_failing_export_never_changes_the_answer(
    make_session: Callable[..., Session], settings: CompactionSettings,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    trail = ExportSpy()
    shut: list[bool] = []
    trail.shutdown = lambda: shut.append(True)  # type: ignore[attr-defined]
    monkeypatch.setattr(compact, "_hook_trail", lambda: trail)
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "console")
    blocked, output = command_hook(hook_input(make_session()), lambda: (strict(settings), "ph"))
    assert (blocked, output) == (False, {}) and shut == [True]
