"""PreCompact with the real Claude Code: `/compact` on a resumed session runs our command hook
beside an independent hook that copies the transcript; the archive must hold the same bytes."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.archive.local import LocalStore
from gateway.archive.reader import copy_object, verify
from gateway.compaction import CompactionSettings
from gateway.scripted import ScriptedServer
from tests.e2e.harness import Sandbox, claude_run

pytestmark = pytest.mark.e2e

OUR_HOOK = """
import sys
from gateway.compaction import CompactionSettings
from gateway.handlers.compact import run_pre_compact_hook
settings = CompactionSettings.model_validate_json({settings!r})
sys.exit(run_pre_compact_hook(sys.stdin, sys.stdout, sys.stderr, lambda: (settings, "e2e")))
"""

# The independent copy waits, in its own way, until the transcript has been still for 0.5 s.
COPY_HOOK = """
import json, os, shutil, sys, time
path = json.load(sys.stdin)["transcript_path"]
size, still_since = -1, time.monotonic()
while time.monotonic() - still_since < 0.5:
    time.sleep(0.05)
    if os.path.getsize(path) != size:
        size, still_since = os.path.getsize(path), time.monotonic()
shutil.copyfile(path, {target!r})
"""


def hook_settings(tmp: Path, settings: CompactionSettings, copy_to: Path) -> str:
    ours, copier = tmp / "our_hook.py", tmp / "copy_hook.py"
    ours.write_text(OUR_HOOK.format(settings=settings.model_dump_json()))
    copier.write_text(COPY_HOOK.format(target=str(copy_to)))
    commands = [f"{sys.executable} {ours}", f"{sys.executable} {copier}"]
    return json.dumps(
        {
            "hooks": {
                "PreCompact": [
                    {"hooks": [{"type": "command", "command": c, "timeout": 60} for c in commands]}
                ]
            }
        }
    )


def compact(
    sandbox: Sandbox, scripted: Callable[[dict[str, Any]], ScriptedServer], settings: Any
) -> tuple[Any, Path, str]:
    scripted({"responses": [{"text": "Hello there, a long enough answer to summarise."}]})
    first = claude_run(sandbox, "say hello")
    assert first.returncode == 0, first.stderr[-2000:]
    sid = first.session_id
    copy = sandbox.home / "independent-copy.jsonl"
    env = sandbox.env(PYTHONPATH=str(Path(__file__).parents[2]))
    out = claude_run(
        sandbox,
        "/compact",
        "--resume",
        sid,
        "--settings",
        hook_settings(sandbox.home, settings, copy),
        env=env,
    )
    return out, copy, sid


def test_manual_compaction_is_archived_byte_for_byte(
    sandbox: Sandbox, scripted: Callable[[dict[str, Any]], ScriptedServer]
) -> None:
    store_dir = sandbox.gateway_home / "archive"
    settings = CompactionSettings(path=str(store_dir))
    out, copy, sid = compact(sandbox, scripted, settings)
    assert out.returncode == 0, out.stderr[-2000:]
    assert any(m.get("subtype") == "compact_boundary" for m in out.messages), out.stdout[-2000:]
    assert [m["compact_result"] for m in out.messages if "compact_result" in m] == ["success"]
    store = LocalStore(store_dir)
    entries = store.entries()
    assert len(entries) == 1
    manifest = store.read_manifest(entries[0].archive_id)
    assert manifest is not None and manifest["session_id"] == sid
    assert manifest["trigger"] == "manual"
    archived = io.BytesIO()
    copy_object(store, manifest["files"][0]["object"], archived.write)
    assert archived.getvalue() == copy.read_bytes(), (len(archived.getvalue()), copy.stat().st_size)
    assert manifest["offset"] == len(archived.getvalue())
    assert verify(store) == (1, None)


def test_required_archive_failure_blocks_compaction(
    sandbox: Sandbox, scripted: Callable[[dict[str, Any]], ScriptedServer]
) -> None:
    blocker = sandbox.home / "not-a-dir"
    blocker.write_text("x")
    settings = CompactionSettings(path=str(blocker / "store"), require_archive=True)
    out, _, _ = compact(sandbox, scripted, settings)
    assert not any(m.get("subtype") == "compact_boundary" for m in out.messages)
    status = [m for m in out.messages if "compact_result" in m]
    assert [m["compact_result"] for m in status] == ["failed"], out.stdout[-2000:]
    assert "Compaction blocked by PreCompact hook" in status[0]["compact_error"]
    assert "transcript archive failed" in status[0]["compact_error"]
    assert "not writable" in status[0]["compact_error"]
