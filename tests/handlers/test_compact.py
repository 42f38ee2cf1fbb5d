from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.archive.local import LocalStore
from gateway.archive.reader import verify
from gateway.compaction import CompactionSettings
from gateway.errors import HookInputError
from gateway.handlers.compact import (
    CompactOutcome,
    archive_before_compact,
    render_pre_compact,
    run_pre_compact_hook,
)
from gateway.hookio.parse import parse_pre_compact
from tests.archive.conftest import Session
from tests.fixtures import CLAUDE_CODE_RECORDINGS

REFERENCE = CLAUDE_CODE_RECORDINGS / "hook-inputs.jsonl"


def test_archived(make_session: Callable[..., Session], settings: CompactionSettings) -> None:
    outcome = archive_before_compact(make_session().request(), settings, "ph")
    assert len(outcome.archive_id) == 64 and not outcome.blocked and not outcome.error
    assert render_pre_compact(outcome) == {}
    assert verify(LocalStore(Path(str(settings.path)))) == (1, None)


def test_disabled(make_session: Callable[..., Session]) -> None:
    outcome = archive_before_compact(
        make_session().request(), CompactionSettings(archive=False), ""
    )
    assert outcome == CompactOutcome(skipped=True)


def test_required_failure_blocks(
    make_session: Callable[..., Session], unwritable: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = CompactionSettings(path=unwritable, require_archive=True, settle_timeout_s=0)
    outcome = archive_before_compact(make_session().request(), settings, "")
    assert outcome.blocked and "not writable" in outcome.block_reason
    assert render_pre_compact(outcome) == {"decision": "block", "reason": outcome.block_reason}
    assert "compaction blocked" in caplog.text


def test_optional_failure_is_logged_and_proceeds(
    make_session: Callable[..., Session], unwritable: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = CompactionSettings(path=unwritable, settle_timeout_s=0, require_archive=False)
    with caplog.at_level(logging.ERROR):
        outcome = archive_before_compact(make_session().request(), settings, "")
    assert not outcome.blocked and outcome.error and not outcome.archive_id
    assert any(r.levelno == logging.ERROR and "NOT ARCHIVED" in r.message for r in caplog.records)
    assert "systemMessage" in render_pre_compact(outcome)


def test_outside_root_is_refused(
    projects: Path, tmp_path: Path, settings: CompactionSettings
) -> None:
    outside = tmp_path / "x.jsonl"
    outside.write_text("{}\n")
    data = {"session_id": "s", "transcript_path": str(outside), "trigger": "manual"}
    strict = settings.model_copy(update={"require_archive": True})
    outcome = archive_before_compact(parse_pre_compact(data), strict, "")
    assert outcome.blocked and "outside the Claude projects root" in outcome.block_reason


def test_parse_the_recorded_hook_input() -> None:
    line = next(
        json.loads(raw) for raw in REFERENCE.read_text().splitlines() if "PreCompact" in raw
    )
    request = parse_pre_compact(line)
    assert request.trigger == "auto" and request.custom_instructions is None
    assert request.prompt_id and request.transcript_path.endswith(".jsonl")
    with pytest.raises(HookInputError):
        parse_pre_compact({**line, "hook_event_name": "PreToolUse"})
    with pytest.raises(HookInputError):
        parse_pre_compact({**line, "session_id": 3})


def hook_input(session: Session) -> str:
    return json.dumps(dict(session.request().raw))


def test_in_process_hook_contract(
    make_session: Callable[..., Session], settings: CompactionSettings, unwritable: str
) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = run_pre_compact_hook(
        io.StringIO(hook_input(make_session())), out, err, lambda: (settings, "ph")
    )
    assert (code, json.loads(out.getvalue()), err.getvalue()) == (0, {}, "")

    def broken_loader() -> tuple[CompactionSettings, str]:
        raise ValueError("policy.yaml:3: bad\nsecond line")

    out, err = io.StringIO(), io.StringIO()
    assert run_pre_compact_hook(io.StringIO("{}"), out, err, broken_loader) == 2
    assert len(err.getvalue().splitlines()) == 1 and "policy.yaml:3" in err.getvalue()

    strict = CompactionSettings(require_archive=True, path=unwritable)
    out, err = io.StringIO(), io.StringIO()
    assert run_pre_compact_hook(io.StringIO("not json"), out, err, lambda: (strict, "")) == 2
    assert "bad hook input" in err.getvalue() and len(err.getvalue().splitlines()) == 1


HOOK = """
import sys
from gateway.compaction import CompactionSettings
from gateway.handlers.compact import run_pre_compact_hook
settings = CompactionSettings.model_validate_json(sys.argv[1])
sys.exit(run_pre_compact_hook(sys.stdin, sys.stdout, sys.stderr, lambda: (settings, "ph")))
"""


def run_hook(settings: CompactionSettings, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HOOK, settings.model_dump_json()],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_subprocess_exit_0_archives(
    make_session: Callable[..., Session], settings: CompactionSettings
) -> None:
    proc = run_hook(settings, hook_input(make_session()))
    assert (proc.returncode, json.loads(proc.stdout), proc.stderr) == (0, {}, "")
    assert verify(LocalStore(Path(str(settings.path)))) == (1, None)


def test_subprocess_exit_2_blocks_with_one_line(
    make_session: Callable[..., Session], unwritable: str
) -> None:
    strict = CompactionSettings(require_archive=True, path=unwritable, settle_timeout_s=0)
    proc = run_hook(strict, hook_input(make_session()))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "compaction blocked" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["decision"] == "block"


def test_subprocess_optional_failure_exits_0(
    make_session: Callable[..., Session], unwritable: str
) -> None:
    lenient = CompactionSettings(path=unwritable, require_archive=False)
    proc = run_hook(lenient, hook_input(make_session()))
    assert proc.returncode == 0 and "NOT ARCHIVED" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_hook_import_path_stays_light() -> None:
    code = (
        "import sys, gateway.handlers.compact, gateway.archive.archiver;"
        "bad = [m for m in ('boto3', 'aiohttp', 'claude_agent_sdk') if m in sys.modules];"
        "print(bad)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_without_a_policy_a_failed_archive_blocks_compaction(
    make_session: Callable[..., Session], tmp_path: Path
) -> None:
    """`agent-gateway hook pre-compact` with no policy at all fails closed: require_archive is
    on by default."""
    assert CompactionSettings().require_archive is True
    session = make_session()
    home = tmp_path / "home-is-a-file"
    home.write_text("x")  # the default store, AGENT_GATEWAY_HOME/archive, cannot be created
    env = {**os.environ, "AGENT_GATEWAY_HOME": str(home)}
    env.pop("AGENT_GATEWAY_POLICY", None)
    proc = subprocess.run(
        [sys.executable, "-m", "gateway", "hook", "pre-compact"],
        input=hook_input(session), capture_output=True, text=True, env=env, timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert json.loads(proc.stdout)["decision"] == "block"
    assert proc.stderr.count("\n") == 1 and "compaction blocked" in proc.stderr
