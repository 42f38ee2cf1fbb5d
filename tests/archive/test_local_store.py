from __future__ import annotations

import hashlib
import io
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.archive import archiver, capture, streaming
from gateway.archive.archiver import archive_session
from gateway.archive.local import LocalStore
from gateway.archive.reader import copy_object, verify
from gateway.archive.store import chain_key, local_root, manifest_key, object_key, open_store
from gateway.compaction import CompactionSettings, RedactionRule
from gateway.errors import ArchiveError
from tests.archive.conftest import Session, jsonl

NO_WAIT = CompactionSettings(settle_timeout_s=0)


def take(session: Session, store: LocalStore, settings: CompactionSettings = NO_WAIT) -> Any:
    return archive_session(session.request(), settings, "policy-hash", store)


def stored_bytes(store: LocalStore, digest: str) -> bytes:
    out = io.BytesIO()
    copy_object(store, digest, out.write)
    return out.getvalue()


def visible(store: LocalStore) -> list[Path]:
    """Everything a reader could see: objects, manifests, chain entries (not tmp/)."""
    return [
        p
        for sub in ("objects", "manifests", "chain")
        for p in (store.root / sub).rglob("*")
        if p.is_file()
    ]


def test_archive_round_trip(make_session: Callable[..., Session], store: LocalStore) -> None:
    s = make_session()
    original = s.transcript.read_bytes()
    m = take(s, store)
    assert m["session_id"] == s.session_id and m["trigger"] == "manual"
    assert m["offset"] == len(original) and m["lines"] == 2
    assert m["policy_hash"] == "policy-hash" and m["hook_input"]["prompt_id"] == "p-1"
    roles = [f["role"] for f in m["files"]]
    assert roles == ["transcript", "subagents", "tool-results"]
    transcript = m["files"][0]
    assert transcript["sha256"] == transcript["object"] == hashlib.sha256(original).hexdigest()
    assert stored_bytes(store, transcript["object"]) == original
    assert (store.root / object_key(transcript["object"])).is_file()
    assert store.entries()[0].archive_id == m["hash"]
    assert verify(store) == (1, None)
    assert list((store.root / "tmp").iterdir()) == []


def test_chain_links_consecutive_archives(
    make_session: Callable[..., Session], store: LocalStore
) -> None:
    first, second = take(make_session(), store), take(make_session(), store)
    assert second["prev_hash"] == first["hash"]
    assert [e.seq for e in store.entries()] == [0, 1]
    assert verify(store) == (2, None)


def test_identical_content_is_stored_once(
    make_session: Callable[..., Session], store: LocalStore
) -> None:
    a, b = take(make_session(), store), take(make_session(), store)
    assert a["files"][0]["object"] == b["files"][0]["object"]
    assert len(list((store.root / "objects").rglob("*.zst"))) == 3


def test_offset_is_the_settled_size(
    make_session: Callable[..., Session], store: LocalStore
) -> None:
    s = make_session(jsonl({"n": 1}), extras=False)
    m = take(s, store, CompactionSettings(settle_timeout_s=1))
    assert m["offset"] == s.transcript.stat().st_size


def test_redacted_copy_keeps_original_hash(
    make_session: Callable[..., Session], store: LocalStore
) -> None:
    content = jsonl({"text": "token sk-ant-api03-" + "Z" * 30}, {"text": "acct-42"})
    s = make_session(content, extras=False)
    settings = CompactionSettings(
        settle_timeout_s=0,
        builtin_redaction=True,
        redact=(RedactionRule(id="acct", pattern=r"acct-\d+"),),
    )
    m = take(s, store, settings)
    f = m["files"][0]
    assert f["sha256"] == hashlib.sha256(content).hexdigest() != f["object"]
    assert f["redactions"] == ["acct", "builtin.anthropic-key"]
    assert "acct" in m["redaction_rules"] and "builtin.jwt" in m["redaction_rules"]
    stored = stored_bytes(store, f["object"])
    assert b"sk-ant" not in stored and b"[REDACTED:acct]" in stored
    assert verify(store) == (1, None)


def test_crash_mid_object_leaves_nothing_visible(
    make_session: Callable[..., Session], store: LocalStore
) -> None:
    patch = pytest.MonkeyPatch()
    s = make_session(b"x" * 3_000_000 + b"\n", extras=False)
    patch.setattr(streaming, "CHUNK", 1 << 16)
    real_open = capture.open_confined

    class Dying(io.BytesIO):
        def read(self, n: int | None = -1) -> bytes:
            if self.tell() > 600_000:
                raise OSError("simulated crash: disk vanished")
            return super().read(n)

    def dying_open(path: Path) -> Any:
        with real_open(path) as f:
            return Dying(f.read())

    patch.setattr(archiver, "open_confined", dying_open)
    with pytest.raises(ArchiveError, match="simulated crash"):
        take(s, store)
    patch.undo()
    assert visible(store) == [] and store.entries() == []
    assert list((store.root / "tmp").iterdir()) == []


def test_killed_process_mid_write_leaves_only_a_temp_file(
    make_session: Callable[..., Session], store: LocalStore
) -> None:
    patch = pytest.MonkeyPatch()
    """A hard kill skips every cleanup: the partial object sits in tmp/, never under a key."""
    s = make_session(b"y" * 500_000 + b"\n", extras=False)

    def kill_at_publish(self: LocalStore, temp: Path, key: str) -> None:
        raise SystemExit("killed")  # stands in for SIGKILL before the rename

    patch.setattr(LocalStore, "publish", kill_at_publish)
    with pytest.raises(SystemExit):
        take(s, store)
    patch.undo()
    assert visible(store) == [] and store.entries() == []
    assert verify(store) == (0, None)


def test_crash_before_the_chain_entry_hides_the_archive(
    make_session: Callable[..., Session], store: LocalStore
) -> None:
    patch = pytest.MonkeyPatch()
    take(make_session(), store)
    real = LocalStore.write_atomic

    def die_on_chain(self: LocalStore, key: str, data: bytes) -> None:
        if key.startswith("chain/"):
            raise OSError("simulated crash")
        real(self, key, data)

    patch.setattr(LocalStore, "write_atomic", die_on_chain)
    with pytest.raises(ArchiveError):
        take(make_session(), store)
    patch.undo()
    assert len(store.entries()) == 1 and verify(store) == (1, None)
    third = take(make_session(), store)  # the chain continues from the last visible archive
    assert third["prev_hash"] == store.entries()[0].archive_id
    assert verify(store) == (2, None)


def test_concurrent_appends_keep_one_chain(
    make_session: Callable[..., Session], store: LocalStore
) -> None:
    sessions = [make_session(extras=False) for _ in range(12)]
    errors: list[BaseException] = []

    def work(s: Session) -> None:
        try:
            take(s, LocalStore(store.root))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [e.seq for e in store.entries()] == list(range(12))
    assert verify(store) == (12, None)


@pytest.fixture
def three(make_session: Callable[..., Session], store: LocalStore) -> list[dict[str, Any]]:
    return [take(make_session(jsonl({"n": i}), extras=False), store) for i in range(3)]


def test_flipped_byte_in_an_object_fails(store: LocalStore, three: list[dict[str, Any]]) -> None:
    path = store.root / object_key(three[1]["files"][0]["object"])
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    count, broken = verify(store)
    assert count == 1 and broken is not None and broken.position == 2
    assert "corrupted" in broken.reason


def test_flipped_byte_in_a_manifest_fails(store: LocalStore, three: list[dict[str, Any]]) -> None:
    path = store.root / manifest_key(three[2]["hash"])
    path.write_bytes(path.read_bytes().replace(b'"trigger":"manual"', b'"trigger":"manuel"'))
    _, broken = verify(store)
    assert broken is not None and broken.position == 3 and "edited" in broken.reason


def test_missing_object_fails(store: LocalStore, three: list[dict[str, Any]]) -> None:
    os.unlink(store.root / object_key(three[0]["files"][0]["object"]))
    _, broken = verify(store)
    assert broken is not None and broken.position == 1 and "missing" in broken.reason


def test_deleted_archive_fails(store: LocalStore, three: list[dict[str, Any]]) -> None:
    os.unlink(store.root / chain_key(1))
    os.unlink(store.root / manifest_key(three[1]["hash"]))
    _, broken = verify(store)
    assert broken is not None and broken.position == 2 and "deleted" in broken.reason


def test_deleted_and_renumbered_archive_fails(
    store: LocalStore, three: list[dict[str, Any]]
) -> None:
    os.replace(store.root / chain_key(2), store.root / chain_key(1))
    _, broken = verify(store)
    assert broken is not None and broken.position == 2 and "prev_hash" in broken.reason


def test_swapped_archives_fail(store: LocalStore, three: list[dict[str, Any]]) -> None:
    a, b = store.root / chain_key(0), store.root / chain_key(1)
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)
    _, broken = verify(store)
    assert broken is not None and broken.position == 1 and "prev_hash" in broken.reason


def test_unwritable_store_is_an_archive_error(
    make_session: Callable[..., Session], tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ArchiveError, match="not writable"):
        take(make_session(), LocalStore(blocker / "store"))


def test_store_selection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(tmp_path / "home"))
    assert local_root(CompactionSettings()) == tmp_path / "home" / "archive"
    assert local_root(CompactionSettings(), tmp_path / "h2") == tmp_path / "h2" / "archive"
    assert local_root(CompactionSettings(path=str(tmp_path / "p"))) == tmp_path / "p"
    store = open_store(CompactionSettings(path=str(tmp_path / "p")))
    assert isinstance(store, LocalStore) and store.root == tmp_path / "p"
