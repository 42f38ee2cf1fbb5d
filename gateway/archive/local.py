"""The local directory store: temp file + fsync + rename, appends under an fcntl lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from gateway.archive.chain import ChainEntry, head_hash, next_seq
from gateway.archive.manifest import Manifest
from gateway.archive.sealing import CHECKPOINT_KEY, Sealing, next_checkpoint
from gateway.archive.store import (
    ManifestBuilder,
    chain_key,
    decode_checkpoint,
    decode_manifest,
    manifest_key,
    object_key,
)
from gateway.errors import ArchiveError
from gateway.hashchain import canonical_json
from gateway.types import JSONObject


class _LocalStaged:
    def __init__(self, store: LocalStore, file: BinaryIO, path: Path) -> None:
        self._store = store
        self.file = file
        self.path = path
        self.committed = False

    def commit(self, digest: str) -> None:
        self.file.flush()
        os.fsync(self.file.fileno())
        self._store.publish(self.path, object_key(digest))
        self.committed = True


class LocalStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.location = str(root)

    def _ensure(self) -> None:
        try:
            for sub in ("tmp", "objects", "manifests", "chain"):
                (self.root / sub).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ArchiveError(f"archive store {self.root} is not writable: {exc}") from exc

    @contextlib.contextmanager
    def stage(self) -> Iterator[_LocalStaged]:
        self._ensure()
        # The temp file lives inside the store so the final rename stays on one filesystem.
        fd, name = tempfile.mkstemp(dir=self.root / "tmp", prefix="obj-", suffix=".part")
        staged = _LocalStaged(self, os.fdopen(fd, "w+b"), Path(name))
        try:
            yield staged
        finally:
            staged.file.close()
            if not staged.committed:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name)

    def publish(self, temp: Path, key: str) -> None:
        """Rename a complete, fsynced temp file to its key; the directory entry is fsynced too."""
        target = self.root / key
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(temp, target)
        _fsync_dir(target.parent)

    def write_atomic(self, key: str, data: bytes) -> None:
        self._ensure()
        fd, name = tempfile.mkstemp(dir=self.root / "tmp", prefix="meta-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            self.publish(Path(name), key)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
            raise

    def open_object(self, digest: str) -> BinaryIO:
        try:
            return open(self.root / object_key(digest), "rb")
        except FileNotFoundError as exc:
            raise ArchiveError(f"object {digest} missing from {self.location}") from exc

    def read_manifest(self, archive_id: str) -> JSONObject | None:
        try:
            data = (self.root / manifest_key(archive_id)).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return decode_manifest(data)

    def entries(self) -> list[ChainEntry]:
        chain = self.root / "chain"
        if not chain.is_dir():
            return []
        found: list[ChainEntry] = []
        for path in chain.iterdir():
            if path.name.isdigit():
                found.append(ChainEntry(int(path.name), path.read_text().strip()))
        return sorted(found, key=lambda e: e.seq)

    def append(self, build: ManifestBuilder, sealing: Sealing) -> Manifest:
        self._ensure()
        with open(self.root / "lock", "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            entries = self.entries()
            manifest = build(head_hash(entries), len(entries) + 1)
            archive_id = str(manifest["hash"])
            self.write_atomic(manifest_key(archive_id), canonical_json(manifest) + b"\n")
            # The chain entry is the commit point: before it the archive is invisible.
            appended = ChainEntry(next_seq(entries), archive_id)
            self.write_atomic(chain_key(appended.seq), f"{archive_id}\n".encode())
            head = self.read_manifest(entries[-1].archive_id) if entries else None
            checkpoint = next_checkpoint(
                self.read_checkpoint(), entries, head, appended, self.location, sealing
            )
            self.write_atomic(CHECKPOINT_KEY, canonical_json(checkpoint) + b"\n")
        return manifest

    def read_checkpoint(self) -> JSONObject | None:
        try:
            data = (self.root / CHECKPOINT_KEY).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return decode_checkpoint(data)

    @contextlib.contextmanager
    def consistent(self) -> Iterator[None]:
        try:
            lock = open(self.root / "lock", "rb")  # noqa: SIM115  # held for the block
        except OSError:  # never appended to (or unreadable): nothing to hold off
            yield
            return
        with lock:
            fcntl.flock(lock, fcntl.LOCK_SH)
            yield

    def __repr__(self) -> str:
        return f"LocalStore({self.root})"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["LocalStore"]
