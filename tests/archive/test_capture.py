from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gateway.archive.capture import confine, session_files, settle
from gateway.errors import ArchiveError
from tests.archive.conftest import Session


def test_session_files_finds_subagents_and_tool_results(
    make_session: Callable[..., Session],
) -> None:
    s = make_session()
    files = session_files(s.transcript, s.root)
    assert [(f.role, f.rel_path) for f in files] == [
        ("transcript", f"{s.session_id}.jsonl"),
        ("subagents", f"{s.session_id}/subagents/agent-a1.jsonl"),
        ("tool-results", f"{s.session_id}/tool-results/toolu_1.txt"),
    ]


def test_outside_root_is_refused_and_logged(
    projects: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("{}\n")
    with pytest.raises(ArchiveError, match="outside the Claude projects root"):
        confine(outside, projects)
    dotted = projects / ".." / ".." / "elsewhere.jsonl"
    with pytest.raises(ArchiveError, match="outside"):
        confine(dotted, projects)
    assert "refused to archive" in caplog.text


def test_symlinked_transcript_leading_out_is_refused(projects: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret\n")
    link = projects / "evil.jsonl"
    link.symlink_to(secret)
    with pytest.raises(ArchiveError, match="symlink leading out"):
        session_files(link, projects)


def test_symlink_out_inside_subagents_is_refused(
    make_session: Callable[..., Session], tmp_path: Path
) -> None:
    s = make_session()
    secret = tmp_path / "id_rsa"
    secret.write_text("key\n")
    (s.session_dir / "subagents" / "agent-evil.jsonl").symlink_to(secret)
    with pytest.raises(ArchiveError, match="symlink leading out"):
        session_files(s.transcript, s.root)


def test_symlinked_directory_out_is_refused(
    make_session: Callable[..., Session], tmp_path: Path
) -> None:
    s = make_session(extras=False)
    s.session_dir.mkdir()
    (s.session_dir / "tool-results").symlink_to(tmp_path)
    with pytest.raises(ArchiveError, match="symlink leading out"):
        session_files(s.transcript, s.root)


def test_fifo_is_refused(projects: Path) -> None:
    fifo = projects / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ArchiveError, match="not a regular file"):
        confine(fifo, projects)


def test_settle_waits_for_a_file_still_being_appended(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"first\n")
    written = threading.Event()

    def writer() -> None:
        for i in range(8):
            with open(path, "ab") as f:
                f.write(f"line {i}\n".encode())
            time.sleep(0.02)
        written.set()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        offset = settle(path, timeout_s=5)
    finally:
        thread.join()
    assert written.is_set()
    assert offset == path.stat().st_size


def test_settle_is_bounded_by_the_timeout(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x")
    stop = threading.Event()

    def writer() -> None:
        while not stop.is_set():
            with open(path, "ab") as f:
                f.write(b"y" * 10)
            time.sleep(0.005)

    thread = threading.Thread(target=writer)
    thread.start()
    started = time.monotonic()
    try:
        offset = settle(path, timeout_s=0.3)
    finally:
        stop.set()
        thread.join()
    assert time.monotonic() - started < 1.5
    assert 0 < offset <= path.stat().st_size


def test_settle_returns_at_once_for_a_quiet_file(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"done\n")
    old = time.time() - 10
    os.utime(path, (old, old))
    sleeps: list[float] = []
    assert settle(path, 5, sleep=sleeps.append) == 5 and sleeps == []


# --- only the requesting session's own files ------------------------------------------------
def test_a_hard_link_to_a_file_outside_the_root_is_refused_and_logged(
    make_session: Callable[..., Session], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    s = make_session(extras=False)
    secret = tmp_path / "id_rsa"
    secret.write_text("private key\n")
    s.transcript.unlink()
    os.link(secret, s.transcript)  # inside the root by name, outside by content
    with pytest.raises(ArchiveError, match="2 hard links"):
        session_files(s.transcript, s.root, s.session_id)
    assert "refused to archive" in caplog.text


def test_a_hard_link_inside_the_session_directory_is_refused(
    make_session: Callable[..., Session], tmp_path: Path
) -> None:
    s = make_session()
    secret = tmp_path / "token"
    secret.write_text("secret\n")
    os.link(secret, s.session_dir / "tool-results" / "toolu_2.txt")
    with pytest.raises(ArchiveError, match="hard links"):
        session_files(s.transcript, s.root, s.session_id)


def test_another_sessions_transcript_is_refused(
    make_session: Callable[..., Session], caplog: pytest.LogCaptureFixture
) -> None:
    mine, theirs = make_session(), make_session()
    with pytest.raises(ArchiveError, match="not the transcript of session"):
        session_files(theirs.transcript, mine.root, mine.session_id)
    # nor through a symlink named like mine that resolves to theirs
    mine.transcript.unlink()
    mine.transcript.symlink_to(theirs.transcript)
    with pytest.raises(ArchiveError, match="not the transcript of session"):
        session_files(mine.transcript, mine.root, mine.session_id)
    assert "refused to archive" in caplog.text


@pytest.mark.parametrize("session_id", ["", ".", "..", "a/b"])
def test_session_ids_that_are_not_file_names_are_refused(
    make_session: Callable[..., Session], session_id: str
) -> None:
    s = make_session(extras=False)
    with pytest.raises(ArchiveError, match="not the transcript of session"):
        session_files(s.transcript, s.root, session_id)


def test_side_files_must_stay_in_the_sessions_own_directory(
    make_session: Callable[..., Session],
) -> None:
    mine, theirs = make_session(), make_session()
    (mine.session_dir / "subagents" / "theirs.jsonl").symlink_to(
        theirs.session_dir / "subagents" / "agent-a1.jsonl"
    )
    with pytest.raises(ArchiveError, match="the session's directory"):
        session_files(mine.transcript, mine.root, mine.session_id)
