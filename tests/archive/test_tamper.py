"""Each way of hiding or forging an archive, detected by `archive verify` at its position;
`archive show` will not hand out an archive from a chain that fails."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.archive.archiver import archive_session
from gateway.archive.commands import archive_show
from gateway.archive.local import LocalStore
from gateway.archive.reader import verify_store
from gateway.archive.store import chain_key, manifest_key
from gateway.compaction import CompactionSettings
from gateway.integrity.keys import KeySet
from tests.archive.conftest import Session, jsonl
from tests.archive.forge import forge_checkpoint, forge_newest
from tests.audit.tamper import KEY

ROOT = Path(__file__).resolve().parents[2]
NO_WAIT = CompactionSettings(settle_timeout_s=0)


def take(
    make_session: Callable[..., Session], store: LocalStore, n: int, keys: KeySet | None = None
) -> list[dict[str, Any]]:
    return [
        archive_session(make_session(jsonl({"n": i, "secret": "kept"}), extras=False).request(),
                        NO_WAIT, "ph", store, keys=keys)
        for i in range(n)
    ]


def _delete_newest(store: LocalStore) -> None:
    newest = store.entries()[-1]
    os.unlink(store.root / chain_key(newest.seq))
    os.unlink(store.root / manifest_key(newest.archive_id))


@pytest.mark.parametrize("keys", [None, KEY], ids=["no key", "key"])
def test_deleting_the_newest_archive_with_its_chain_entry(
    make_session: Callable[..., Session], store: LocalStore, keys: KeySet | None
) -> None:
    take(make_session, store, 3, keys)
    assert verify_store(store, keys).broken is None
    _delete_newest(store)
    broken = verify_store(store, keys).broken
    assert broken is not None and broken.position == 3
    assert str(broken).startswith("archive 3: missing: checkpoint #3 counts 3")


def test_a_forged_archive_without_the_key(
    make_session: Callable[..., Session], store: LocalStore
) -> None:
    take(make_session, store, 3)
    forge_newest(store, jsonl({"n": 2, "secret": "forged"}))
    broken = verify_store(store, None).broken
    assert broken is not None and broken.position == 3
    assert "differs from the head named by checkpoint #3" in broken.reason


def test_a_forged_archive_with_the_key_and_its_checkpoint_rewritten(
    make_session: Callable[..., Session], store: LocalStore
) -> None:
    take(make_session, store, 3, KEY)
    forged = forge_newest(store, jsonl({"n": 2, "secret": "forged"}))
    forge_checkpoint(store)
    broken = verify_store(store, KEY).broken
    assert broken is not None and broken.position == 3 and "no MAC" in broken.reason
    assert broken.archive_id == forged["hash"]


def test_without_the_key_a_forgery_with_its_checkpoint_passes(
    make_session: Callable[..., Session], store: LocalStore
) -> None:
    """The documented limit: a writer with everything local and no key configured."""
    take(make_session, store, 2)
    forge_newest(store, jsonl({"forged": True}))
    forge_checkpoint(store)
    assert verify_store(store, None).broken is None


def test_show_refuses_an_archive_from_a_forged_chain(
    make_session: Callable[..., Session], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "gw-home"
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(home))
    store = LocalStore(home / "archive")
    take(make_session, store, 2)
    forged = forge_newest(store, jsonl({"forged": "line"}))
    out, err = io.BytesIO(), io.StringIO()
    assert archive_show(forged["hash"], out=out, err=err) == 1
    assert b"forged" not in out.getvalue()
    assert "fails verification at archive 2" in err.getvalue()


def test_replaying_an_older_checkpoint(
    make_session: Callable[..., Session], store: LocalStore
) -> None:
    take(make_session, store, 2, KEY)
    saved = (store.root / "checkpoint.json").read_bytes()
    take(make_session, store, 2, KEY)
    _delete_newest(store)
    (store.root / "checkpoint.json").write_bytes(saved)
    broken = verify_store(store, KEY).broken
    assert broken is not None and broken.position == 3 and "not covered by checkpoint #2" in (
        broken.reason
    )


def test_a_deleted_checkpoint_is_flagged_and_stays_flagged(
    make_session: Callable[..., Session], store: LocalStore
) -> None:
    take(make_session, store, 3)
    _delete_newest(store)
    os.unlink(store.root / "checkpoint.json")
    broken = verify_store(store, None).broken
    assert broken is not None and broken.position == 2 and "no checkpoint" in broken.reason
    take(make_session, store, 1)
    broken = verify_store(store, None).broken
    assert broken is not None and "checkpoint was missing" in broken.reason


@pytest.mark.parametrize("keyed", [False, True], ids=["no key", "key"])
def test_detected_through_the_cli(
    make_session: Callable[..., Session], tmp_path: Path, keyed: bool
) -> None:
    home = tmp_path / "gw-home"
    store = LocalStore(home / "archive")
    take(make_session, store, 3, KEY if keyed else None)
    env = {**os.environ, "AGENT_GATEWAY_HOME": str(home), "PYTHONPATH": str(ROOT)}
    if keyed:
        key = tmp_path / "audit.key"
        key.write_text("k" * 40 + "\n")
        env["AGENT_GATEWAY_AUDIT_KEY_FILE"] = str(key)
    ok = _cli(env, "archive", "verify")
    assert ok.returncode == 0 and "OK, 3 archives" in ok.stdout and "checkpoint #3" in ok.stdout
    forge_newest(store, jsonl({"forged": True}))
    if keyed:
        forge_checkpoint(store)
    failed = _cli(env, "archive", "verify")
    assert failed.returncode == 1
    assert failed.stderr.startswith("archive verify: FAILED at archive 3 (")
    _delete_newest(store)
    deleted = _cli(env, "archive", "verify")
    assert deleted.returncode == 1
    if keyed:  # the unkeyed checkpoint the forger left is what gives the cut away now
        assert "FAILED at archive 2 (" in deleted.stderr and "checkpoint #3: no MAC" in (
            deleted.stderr
        )
    else:
        assert "FAILED at archive 3: missing" in deleted.stderr


def _append(root: str, n: int) -> None:
    store = LocalStore(Path(root))
    from gateway.archive.sealing import Sealing

    for i in range(n):
        store.append(lambda prev, pos, i=i: _manifest(prev, pos, i), Sealing(KEY, "2026"))


def _manifest(prev: str, position: int, i: int) -> dict[str, Any]:
    from gateway.integrity.keys import sealed_link

    return sealed_link({"n": i, "files": [], "seq": position}, prev, KEY)


def test_no_false_alarm_under_eight_concurrent_writers(tmp_path: Path) -> None:
    import multiprocessing

    root = tmp_path / "store"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append, args=(str(root), 6)) for _ in range(8)]
    for proc in procs:
        proc.start()
    while any(p.is_alive() for p in procs):
        broken = verify_store(LocalStore(root), KEY).broken
        assert broken is None, broken
    for proc in procs:
        proc.join()
        assert proc.exitcode == 0
    report = verify_store(LocalStore(root), KEY)
    assert report.broken is None and report.count == 48


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gateway", *args], env=env,
                          capture_output=True, text=True, timeout=60)
