from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.archive.archiver import archive_session
from gateway.archive.commands import archive_export, archive_list, archive_show, archive_verify
from gateway.archive.local import LocalStore
from gateway.archive.store import chain_key
from gateway.compaction import CompactionSettings
from tests.archive.conftest import Session


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "gw-home"


@pytest.fixture
def archives(make_session: Callable[..., Session], home: Path) -> list[dict[str, Any]]:
    store = LocalStore(home / "archive")
    settings = CompactionSettings(settle_timeout_s=0)
    sessions = [make_session(), make_session()]
    return [archive_session(s.request(), settings, "ph", store) for s in sessions]


def run(fn: Callable[..., int], *args: Any, **kw: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = fn(*args, out=out, err=err, **kw)
    return code, out.getvalue(), err.getvalue()


def test_list(archives: list[dict[str, Any]], home: Path) -> None:
    code, out, _ = run(archive_list, None, home)
    lines = out.splitlines()
    assert code == 0 and [line.split()[0] for line in lines] == [a["hash"] for a in archives]
    code, out, _ = run(archive_list, archives[1]["session_id"], home)
    assert code == 0 and out.split()[0] == archives[1]["hash"] and len(out.splitlines()) == 1


def test_list_uses_gateway_home_by_default(archives: list[dict[str, Any]]) -> None:
    code, out, _ = run(archive_list)  # AGENT_GATEWAY_HOME is the `home` fixture's directory
    assert code == 0 and len(out.splitlines()) == 2


def test_show(archives: list[dict[str, Any]], home: Path, make_session: Any) -> None:
    out, err = io.BytesIO(), io.StringIO()
    code = archive_show(archives[0]["hash"][:10], home, out=out, err=err)
    manifest_text, _, transcript = out.getvalue().partition(b"\n\n")
    assert code == 0 and json.loads(manifest_text)["hash"] == archives[0]["hash"]
    assert transcript == Path(archives[0]["transcript_path"]).read_bytes()


def test_show_unknown_and_short_ids(archives: list[dict[str, Any]], home: Path) -> None:
    err = io.StringIO()
    assert archive_show("ffffffff", home, out=io.BytesIO(), err=err) == 2
    assert err.getvalue().startswith("agent-gateway archive: no archive 'ffffffff'")
    assert len(err.getvalue().splitlines()) == 1
    err = io.StringIO()
    assert archive_show("a", home, out=io.BytesIO(), err=err) == 2
    assert "too short" in err.getvalue()


def test_export(archives: list[dict[str, Any]], home: Path, tmp_path: Path) -> None:
    target = tmp_path / "export"
    code, out, _ = run(archive_export, archives[0]["hash"], target, home)
    assert code == 0 and out.startswith(archives[0]["hash"])
    manifest = json.loads((target / "manifest.json").read_text())
    for f in manifest["files"]:
        original = Path(archives[0]["transcript_path"]).parent / f["path"]
        assert (target / f["path"]).read_bytes() == original.read_bytes()


def test_verify_ok_and_broken(archives: list[dict[str, Any]], home: Path) -> None:
    code, out, _ = run(archive_verify, home)
    assert code == 0 and "OK, 2 archives" in out
    os.unlink(home / "archive" / chain_key(0))
    code, _, err = run(archive_verify, home)
    assert code == 1
    assert err.startswith("archive verify: FAILED at archive 1") and len(err.splitlines()) == 1


def test_errors_are_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "f"
    blocker.write_text("x")
    settings = CompactionSettings(store="s3")
    code, _, err = run(archive_verify, settings=settings)
    assert code == 2 and err == (
        "agent-gateway archive: compaction.bucket is required when compaction.store is 's3'\n"
    )
    code, _, err = run(archive_verify, settings=CompactionSettings(path=str(blocker)))
    assert code == 0  # a store path that is a file holds no archives


def test_empty_store_verifies(home: Path) -> None:
    code, out, _ = run(archive_verify, home)
    assert code == 0 and "OK, 0 archives" in out
