from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gateway.archive.local import LocalStore
from gateway.compaction import CompactionSettings
from gateway.types import CompactRequest


@dataclass
class Session:
    """A fake Claude Code session on disk: `<root>/<proj>/<sid>.jsonl` and `<sid>/...`."""

    root: Path
    session_id: str
    transcript: Path

    @property
    def session_dir(self) -> Path:
        return self.transcript.parent / self.session_id

    def request(self, trigger: str = "manual") -> CompactRequest:
        raw = {
            "session_id": self.session_id,
            "transcript_path": str(self.transcript),
            "cwd": "/srv/project",
            "prompt_id": "p-1",
            "hook_event_name": "PreCompact",
            "trigger": trigger,
            "custom_instructions": None,
        }
        return CompactRequest(
            session_id=self.session_id,
            transcript_path=str(self.transcript),
            trigger=trigger,
            prompt_id="p-1",
            cwd="/srv/project",
            raw=raw,
        )


def jsonl(*records: object) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


@pytest.fixture
def projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "claude" / "projects"
    root.mkdir(parents=True)
    monkeypatch.setenv("AGENT_GATEWAY_CLAUDE_PROJECTS", str(root))
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(tmp_path / "gw-home"))
    return root


@pytest.fixture
def make_session(projects: Path) -> Callable[..., Session]:
    counter = iter(range(1000))

    def make(content: bytes | None = None, *, extras: bool = True) -> Session:
        sid = f"00000000-0000-4000-8000-{next(counter):012d}"
        proj = projects / "-srv-project"
        proj.mkdir(exist_ok=True)
        transcript = proj / f"{sid}.jsonl"
        transcript.write_bytes(
            content
            if content is not None
            else jsonl({"type": "user", "n": 1}, {"type": "assistant", "n": 2})
        )
        session = Session(projects, sid, transcript)
        if extras:
            sub = session.session_dir / "subagents"
            sub.mkdir(parents=True)
            (sub / "agent-a1.jsonl").write_bytes(jsonl({"type": "user", "agent": "a1"}))
            tools = session.session_dir / "tool-results"
            tools.mkdir()
            (tools / "toolu_1.txt").write_bytes(b"big tool output\n")
        return session

    return make


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "store")


@pytest.fixture
def settings(tmp_path: Path) -> CompactionSettings:
    return CompactionSettings(path=str(tmp_path / "store"), settle_timeout_s=0)
