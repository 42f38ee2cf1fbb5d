"""The shell that takes one archive: capture the session's files, stream them into the store,
then link and publish the manifest."""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections.abc import Callable
from pathlib import Path

from gateway import __version__
from gateway.archive.capture import SessionFile, open_confined, session_files, settle
from gateway.archive.manifest import ArchiveFacts, FileRecord, Manifest, build_manifest
from gateway.archive.redact import Redactor, redaction_rules
from gateway.archive.sealing import Sealing
from gateway.archive.store import ArchiveStore
from gateway.archive.streaming import archive_stream
from gateway.compaction import CompactionSettings
from gateway.env import claude_projects_root
from gateway.errors import ArchiveError
from gateway.integrity.keys import FROM_ENV, KeyChoice, resolve_keys
from gateway.types import CompactRequest

log = logging.getLogger("gateway.archive")


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def archive_session(
    request: CompactRequest,
    settings: CompactionSettings,
    policy_hash: str,
    store: ArchiveStore,
    *,
    projects_root: Path | None = None,
    now: Callable[[], str] = utc_now,
    keys: KeyChoice = FROM_ENV,
) -> Manifest:
    """Archive the session's transcript (up to where it settled) and its side directories.

    Returns the published manifest; `manifest["hash"]` is the archive id and `manifest["seq"]`
    its position in the store's chain.
    """
    key_set = resolve_keys(keys)  # a bad key file fails before anything is read
    if not request.transcript_path:
        raise ArchiveError("hook input has no transcript_path")
    root = projects_root if projects_root is not None else claude_projects_root()
    files = session_files(Path(request.transcript_path), root, request.session_id)
    rules = redaction_rules(settings.redact, settings.builtin_redaction)
    redactor = Redactor(rules) if rules else None
    # Settle first: the offset recorded is where the transcript stopped growing.
    offset = settle(files[0].real_path, settings.settle_timeout_s)
    records = [_store_file(files[0], offset, store, redactor)]
    for extra in files[1:]:
        records.append(_store_file(extra, None, store, redactor))
    facts = ArchiveFacts(
        session_id=request.session_id,
        trigger=request.trigger,
        custom_instructions=request.custom_instructions,
        prompt_id=request.prompt_id,
        transcript_path=request.transcript_path,
        created_at=now(),
        gateway_version=__version__,
        policy_hash=policy_hash,
        files=records,
        hook_input=dict(request.raw),
        redaction_rules=tuple(rule.id for rule in rules),
    )
    try:
        manifest = store.append(
            lambda prev, position: build_manifest(facts, prev, position, key_set),
            Sealing(key_set, facts.created_at),
        )
    except OSError as exc:
        raise ArchiveError(f"cannot publish the archive in {store.location}: {exc}") from exc
    log.info(
        "archived session %s (%d bytes, %d files) as %s in %s",
        request.session_id,
        offset,
        len(records),
        manifest["hash"],
        store.location,
    )
    return manifest


def _store_file(
    file: SessionFile, limit: int | None, store: ArchiveStore, redactor: Redactor | None
) -> FileRecord:
    try:
        with open_confined(file.real_path) as src, store.stage() as staged:
            size = limit if limit is not None else os.fstat(src.fileno()).st_size
            stats = archive_stream(src, size, staged.file, redactor)
            staged.commit(stats.stored_sha256)
    except OSError as exc:
        raise ArchiveError(f"cannot archive {file.rel_path} to {store.location}: {exc}") from exc
    return FileRecord(
        role=file.role,
        path=file.rel_path,
        size=stats.size,
        lines=stats.lines,
        sha256=stats.sha256,
        object=stats.stored_sha256,
        stored_size=stats.stored_size,
        redactions=stats.redactions,
    )
