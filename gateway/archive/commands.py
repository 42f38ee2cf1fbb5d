"""`agent-gateway archive ...`: list, show, export, verify. Each returns an exit code and
prints one-line errors (never a traceback) to `err`."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TextIO

from gateway.archive.manifest import archived_files, transcript_object
from gateway.archive.reader import Stored, copy_object, manifests, resolve, verify_store
from gateway.archive.store import ArchiveStore, open_store
from gateway.compaction import CompactionSettings
from gateway.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, ArchiveError, ChainError, GatewayError
from gateway.integrity.checkpoint import checkpoint_summary


def archive_list(
    session: str | None = None,
    home: Path | None = None,
    *,
    settings: CompactionSettings | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """One archive per line: id, time, session, trigger, bytes, lines."""

    def body(store: ArchiveStore) -> int:
        stdout = out or sys.stdout
        for entry, manifest in manifests(store):
            m = manifest or {}
            if session is not None and m.get("session_id") != session:
                continue
            stdout.write(
                f"{entry.archive_id}  {m.get('created_at', '?')}  {m.get('session_id', '?')}"
                f"  {m.get('trigger', '?')}  {m.get('offset', '?')} bytes"
                f"  {m.get('lines', '?')} lines\n"
            )
        return EXIT_OK

    return _run(body, home, settings, err)


def archive_show(
    archive_id: str,
    home: Path | None = None,
    *,
    settings: CompactionSettings | None = None,
    out: BinaryIO | None = None,
    err: TextIO | None = None,
) -> int:
    """The manifest (indented JSON), a blank line, then the transcript decompressed."""

    def body(store: ArchiveStore) -> int:
        stdout = out or sys.stdout.buffer
        _, manifest = _vouched(store, archive_id)
        stdout.write(json.dumps(manifest, indent=2, sort_keys=True).encode() + b"\n\n")
        digest = transcript_object(manifest)
        if digest is not None:
            copy_object(store, digest, stdout.write)
        stdout.flush()
        return EXIT_OK

    return _run(body, home, settings, err)


def archive_export(
    archive_id: str,
    directory: Path,
    home: Path | None = None,
    *,
    settings: CompactionSettings | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Write manifest.json and every archived file (project-relative layout) into `directory`."""

    def body(store: ArchiveStore) -> int:
        entry, manifest = _vouched(store, archive_id)
        target = Path(directory)
        target.mkdir(parents=True, exist_ok=True)
        (target / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
        for f in archived_files(manifest):
            dest = _inside(target, f.path)
            dest.parent.mkdir(parents=True, exist_ok=True)
            with open(dest, "wb") as fh:
                copy_object(store, f.object, fh.write)
        (out or sys.stdout).write(f"{entry.archive_id} exported to {target}\n")
        return EXIT_OK

    return _run(body, home, settings, err)


def archive_verify(
    home: Path | None = None,
    *,
    settings: CompactionSettings | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Every object's hash and the whole chain; exit 1 naming the first broken link."""

    def body(store: ArchiveStore) -> int:
        report = verify_store(store)
        for note in report.notes:
            (err or sys.stderr).write(f"archive verify: note: {note}\n")
        if report.broken is not None:
            (err or sys.stderr).write(f"archive verify: FAILED at {report.broken}\n")
            return EXIT_FAILED
        (out or sys.stdout).write(
            f"archive verify: OK, {report.count} archives in {store.location}"
            f"{checkpoint_summary(report.checkpoint, report.keys)}\n"
        )
        return EXIT_OK

    return _run(body, home, settings, err)


def _run(
    body: Callable[[ArchiveStore], int],
    home: Path | None,
    settings: CompactionSettings | None,
    err: TextIO | None,
) -> int:
    try:
        return body(open_store(settings or CompactionSettings(), home))
    except GatewayError as exc:
        (err or sys.stderr).write(f"agent-gateway archive: {exc}\n")
        return exc.exit_code
    except BrokenPipeError:
        raise  # the reader went away (`archive show ID | head`): the CLI ends quietly
    except OSError as exc:
        (err or sys.stderr).write(f"agent-gateway archive: {exc}\n")
        return EXIT_USAGE


def _vouched(store: ArchiveStore, archive_id: str) -> Stored:
    """The archive `archive_id` (a unique prefix) names, refused from a chain that does not
    hold (its manifests, MACs and checkpoint; each object's own hash is checked as it is
    copied out)."""
    found = resolve(store, archive_id)
    broken = verify_store(store, objects=False).broken
    if broken is not None:
        raise ChainError(
            f"the store fails verification at {broken}: not shown (run `archive verify`)"
        )
    return found


def _inside(root: Path, rel: str) -> Path:
    """`root/rel`, refusing a manifest path that would escape the export directory."""
    dest = Path(os.path.normpath(root / rel))
    if not dest.is_relative_to(Path(os.path.normpath(root))) or Path(rel).is_absolute():
        raise ArchiveError(f"refusing to export {rel!r}: it leaves the export directory")
    return dest
