"""Transcripts archived before compaction, on the real Claude Code through `agent-gateway run`."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from tests.e2e.harness import RunOutcome, Sandbox, gateway_cli, gateway_run

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]
SUMMARY = {
    "when": "compaction",
    "text": "<analysis>ok</analysis><summary>Work so far.</summary>",
    "times": 0,
}


def bash(command: str, when: str, **extra: Any) -> dict[str, Any]:
    return {
        "when": when,
        "text": "step",
        "tool_use": [{"name": "Bash", "input": {"command": command}}],
        **extra,
    }


def witness_settings(copy_dir: Path) -> str:
    """An independent PreCompact command hook that copies the transcript as it is then.

    Claude Code appends the last tool result asynchronously and can still be writing when
    PreCompact fires, so the witness, like the gateway, copies once the file has stopped
    growing for half a second. Compaction waits for both hooks.
    """
    script = (
        "import json,shutil,sys,pathlib,time,os; d=json.load(sys.stdin); p=d['transcript_path']\n"
        "last=-1\n"
        "for _ in range(50):\n"
        "    size=os.path.getsize(p)\n"
        "    if size==last: break\n"
        "    last=size; time.sleep(0.5)\n"
        f"dest=pathlib.Path({str(copy_dir)!r}); dest.mkdir(exist_ok=True)\n"
        "shutil.copyfile(p, dest / (d['trigger'] + '.jsonl'))"
    )
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}"
    return json.dumps(
        {"hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": command}]}]}}
    )


def archive_ids(sandbox: Sandbox) -> list[str]:
    out = gateway_cli(sandbox, "archive", "list")
    assert out.returncode == 0, out.stderr
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


def archived_transcript(sandbox: Sandbox, archive_id: str, session_id: str) -> bytes:
    target = sandbox.cwd.parent / f"export-{archive_id[:12]}"
    out = gateway_cli(sandbox, "archive", "export", archive_id, str(target))
    assert out.returncode == 0, out.stderr
    manifest = json.loads((target / "manifest.json").read_text())
    assert manifest["session_id"] == session_id
    (transcript,) = target.rglob(f"{session_id}.jsonl")
    return transcript.read_bytes()


def first_session(sandbox: Sandbox) -> RunOutcome:
    out = gateway_run(sandbox, "make notes", "--allowed-tools", "Bash")
    assert out.returncode == 0, out.stderr
    return out


def test_manual_compaction_is_archived_byte_for_byte(sandbox: Sandbox, scripted: Scripted) -> None:
    scripted(
        {
            "responses": [
                bash("echo one > notes.txt", "prompt"),
                {"when": "tool_result", "text": "noted"},
                SUMMARY,
            ]
        }
    )
    sid = first_session(sandbox).session_id
    witness = sandbox.cwd.parent / "witness"

    compacted = gateway_run(
        sandbox, "/compact", "--resume", sid, "--settings", witness_settings(witness)
    )
    assert compacted.returncode == 0, compacted.stderr
    assert any(m.get("subtype") == "compact_boundary" for m in compacted.messages)

    (archive_id,) = archive_ids(sandbox)
    at_hook = (witness / "manual.jsonl").read_bytes()
    assert archived_transcript(sandbox, archive_id, sid) == at_hook
    assert b"echo one > notes.txt" in at_hook
    assert gateway_cli(sandbox, "archive", "verify").returncode == 0


def test_auto_compaction_is_archived(sandbox: Sandbox, scripted: Scripted) -> None:
    steps = [bash(f"echo step{n} >> log.txt", "tool_result") for n in range(1, 6)]
    scripted(
        {
            "responses": [
                bash("echo step0 > log.txt", "prompt"),
                *steps,
                bash(
                    "echo big >> log.txt",
                    "tool_result",
                    usage={"input_tokens": 150_000, "output_tokens": 40},
                ),
                SUMMARY,
                {"when": "tool_result", "text": "all steps done"},
                {"when": "prompt", "text": "continuing after the summary", "times": 0},
            ]
        }
    )
    witness = sandbox.cwd.parent / "witness"
    out = gateway_run(
        sandbox,
        "work through the steps",
        "--allowed-tools",
        "Bash",
        "--autocompact",
        "100000",
        "--settings",
        witness_settings(witness),
    )
    assert out.returncode == 0, out.stderr
    boundaries = [m for m in out.messages if m.get("subtype") == "compact_boundary"]
    assert boundaries and boundaries[0]["compact_metadata"]["trigger"] == "auto"

    (archive_id,) = archive_ids(sandbox)
    archived = archived_transcript(sandbox, archive_id, out.session_id)
    at_hook = (witness / "auto.jsonl").read_bytes()
    assert archived == at_hook, _diff(archived, at_hook)
    assert gateway_cli(sandbox, "archive", "verify").returncode == 0


def test_tampering_breaks_verify(sandbox: Sandbox, scripted: Scripted) -> None:
    scripted({"responses": [{"when": "prompt", "text": "hello", "times": 0}, SUMMARY]})
    sid = gateway_run(sandbox, "hi").session_id
    for _ in range(3):
        assert gateway_run(sandbox, "/compact", "--resume", sid).returncode == 0
    assert len(archive_ids(sandbox)) == 3
    assert gateway_cli(sandbox, "archive", "verify").returncode == 0

    objects = sorted(
        p
        for p in (sandbox.gateway_home / "archive").rglob("*")
        if p.is_file() and "objects" in p.parts
    )
    victim = objects[0]
    original = victim.read_bytes()
    victim.write_bytes(bytes([original[0] ^ 1]) + original[1:])
    flipped = gateway_cli(sandbox, "archive", "verify")
    assert flipped.returncode != 0 and "FAILED" in flipped.stderr
    victim.write_bytes(original)
    assert gateway_cli(sandbox, "archive", "verify").returncode == 0

    victim.unlink()
    missing = gateway_cli(sandbox, "archive", "verify")
    assert missing.returncode != 0 and "FAILED" in missing.stderr
    victim.write_bytes(original)
    assert gateway_cli(sandbox, "archive", "verify").returncode == 0

    # Reordering: swap the first two archives' places in the chain.
    chain = sorted((sandbox.gateway_home / "archive" / "chain").iterdir())
    first, second = chain[0].read_bytes(), chain[1].read_bytes()
    chain[0].write_bytes(second)
    chain[1].write_bytes(first)
    swapped = gateway_cli(sandbox, "archive", "verify")
    assert swapped.returncode != 0 and "FAILED" in swapped.stderr
    chain[0].write_bytes(first)
    chain[1].write_bytes(second)
    assert gateway_cli(sandbox, "archive", "verify").returncode == 0

    # Deleting one archive: the middle chain entry goes.
    chain[1].unlink()
    deleted = gateway_cli(sandbox, "archive", "verify")
    assert deleted.returncode != 0 and "FAILED" in deleted.stderr


def test_require_archive_blocks_compaction_when_the_store_is_unwritable(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    scripted({"responses": [{"when": "prompt", "text": "hello", "times": 0}, SUMMARY]})
    sid = gateway_run(sandbox, "hi").session_id
    store = sandbox.cwd.parent / "readonly-store"
    store.mkdir()
    store.chmod(0o500)
    policy = sandbox.cwd.parent / "policy.yaml"
    policy.write_text(f"version: 1\ncompaction:\n  path: {store}/sub\n  require_archive: true\n")
    if _root_can_write(store):
        store.chmod(0o700)
        (store / "sub").write_text("a file where the store directory should be")
    blocked = gateway_run(sandbox, "/compact", "--resume", sid, "--policy", str(policy))
    text = json.dumps(blocked.messages)
    assert not any(m.get("subtype") == "compact_boundary" for m in blocked.messages)
    assert "compaction blocked" in text

    policy.write_text(f"version: 1\ncompaction:\n  path: {store}/sub\n  require_archive: false\n")
    proceeds = gateway_run(sandbox, "/compact", "--resume", sid, "--policy", str(policy))
    assert any(m.get("subtype") == "compact_boundary" for m in proceeds.messages)
    assert "TRANSCRIPT NOT ARCHIVED" in proceeds.stderr


def _root_can_write(directory: Path) -> bool:
    probe = directory / ".probe"
    try:
        probe.write_text("x")
    except OSError:
        return False
    probe.unlink()
    return True


def _diff(archived: bytes, at_hook: bytes) -> str:
    a, w = archived.split(b"\n"), at_hook.split(b"\n")
    first = next(
        (i for i, (x, y) in enumerate(zip(a, w, strict=False)) if x != y), min(len(a), len(w))
    )
    return (
        f"archive {len(archived)} bytes/{len(a)} lines, hook-time copy {len(at_hook)} bytes/"
        f"{len(w)} lines; first difference at line {first}: "
        f"{a[first][:200] if first < len(a) else b'<end>'!r} vs "
        f"{w[first][:200] if first < len(w) else b'<end>'!r}"
    )
