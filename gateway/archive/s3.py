"""The S3-compatible store (AWS, MinIO, ...): objects are uploaded whole, so a key exists only
once complete; the chain entry is created with If-None-Match so concurrent appends never
overwrite each other (the loser re-links after the new head and retries). The checkpoint is
moved with If-Match on the version read, only ever forward.

With `compaction.object_lock_days`, every object, manifest, chain entry and checkpoint version
is written with Object Lock retention (the bucket must have Object Lock enabled): a deletion
then only adds a delete marker, an overwrite only a newer version, and `archive verify` reads
the versions to name both."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

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
from gateway.compaction import CompactionSettings
from gateway.errors import ArchiveError, ConfigError
from gateway.hashchain import canonical_json
from gateway.integrity.checkpoint import checkpoint_problem
from gateway.integrity.checkpoint import counted as checkpoint_count
from gateway.types import JSONObject

log = logging.getLogger("gateway.archive")

APPEND_ATTEMPTS = 8
_MISSING = {"404", "NoSuchKey", "NotFound"}
_TAKEN = {"412", "PreconditionFailed", "ConditionalRequestConflict"}


class _S3Staged:
    def __init__(self, store: S3Store, file: BinaryIO) -> None:
        self._store = store
        self.file = file

    def commit(self, digest: str) -> None:
        self.file.flush()
        self.file.seek(0)
        self._store.upload(object_key(digest), self.file)


@dataclass(frozen=True, slots=True)
class ObjectLock:
    mode: str
    days: int

    def headers(self, now: dt.datetime | None = None) -> dict[str, object]:
        until = (now or dt.datetime.now(dt.UTC)) + dt.timedelta(days=self.days)
        return {"ObjectLockMode": self.mode, "ObjectLockRetainUntilDate": until}


class S3Store:
    def __init__(
        self, client: Any, bucket: str, prefix: str = "", *, lock: ObjectLock | None = None
    ) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.location = f"s3://{bucket}/{self.prefix}"
        self.lock = lock

    @classmethod
    def from_settings(cls, settings: CompactionSettings) -> S3Store:
        if not settings.bucket:
            raise ConfigError("compaction.bucket is required when compaction.store is 's3'")
        client = boto3.client(
            "s3",
            endpoint_url=settings.endpoint_url,
            region_name=settings.region,
            config=Config(retries={"max_attempts": 3, "mode": "standard"}),
        )
        lock = (
            ObjectLock(settings.object_lock_mode, settings.object_lock_days)
            if settings.object_lock_days
            else None
        )
        return cls(client, settings.bucket, settings.prefix, lock=lock)

    def _key(self, key: str) -> str:
        return self.prefix + key

    @contextlib.contextmanager
    def stage(self) -> Iterator[_S3Staged]:
        # Spool to local disk: the digest (the key) is known only at the end of the stream.
        with tempfile.TemporaryFile(prefix="agent-gateway-") as f:
            yield _S3Staged(self, f)

    def upload(self, key: str, body: BinaryIO) -> None:
        # upload_fileobj goes multipart above 8 MB; S3 shows the key only after completion.
        try:
            extra = {"ExtraArgs": self.lock.headers()} if self.lock else {}
            self.client.upload_fileobj(body, self.bucket, self._key(key), **extra)
        except (BotoCoreError, ClientError) as exc:
            raise ArchiveError(f"cannot write {self._key(key)} to {self.location}: {exc}") from exc

    def open_object(self, digest: str) -> BinaryIO:
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self._key(object_key(digest)))
        except ClientError as exc:
            if _code(exc) in _MISSING:
                raise ArchiveError(f"object {digest} missing from {self.location}") from exc
            raise ArchiveError(f"cannot read object {digest}: {exc}") from exc
        except BotoCoreError as exc:
            raise ArchiveError(f"cannot read object {digest}: {exc}") from exc
        body: BinaryIO = response["Body"]
        return body

    def _get(self, key: str) -> bytes | None:
        return self._get_tagged(key)[0]

    def _get_tagged(self, key: str, version: str | None = None) -> tuple[bytes | None, str]:
        """An object's bytes and ETag (None and "" when it does not exist)."""
        extra = {"VersionId": version} if version else {}
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self._key(key), **extra)
        except ClientError as exc:
            if _code(exc) in _MISSING:
                return None, ""
            raise ArchiveError(f"cannot read {self._key(key)}: {exc}") from exc
        except BotoCoreError as exc:
            raise ArchiveError(f"cannot read {self._key(key)}: {exc}") from exc
        data: bytes = response["Body"].read()
        return data, str(response.get("ETag", ""))

    def read_manifest(self, archive_id: str) -> JSONObject | None:
        data = self._get(manifest_key(archive_id))
        return None if data is None else decode_manifest(data)

    def entries(self) -> list[ChainEntry]:
        found: list[ChainEntry] = []
        start = self._key("chain/")
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=start
            )
            for page in pages:
                for item in page.get("Contents", []):
                    name = str(item["Key"])[len(start) :]
                    if name.isdigit():
                        data = self._get(f"chain/{name}") or b""
                        found.append(ChainEntry(int(name), data.decode(errors="replace").strip()))
        except (BotoCoreError, ClientError) as exc:
            raise ArchiveError(f"cannot list {self.location}: {exc}") from exc
        return sorted(found, key=lambda e: e.seq)

    def append(self, build: ManifestBuilder, sealing: Sealing) -> Manifest:
        for _ in range(APPEND_ATTEMPTS):
            entries = self.entries()
            manifest = build(head_hash(entries), len(entries) + 1)
            archive_id = str(manifest["hash"])
            self._put(manifest_key(archive_id), canonical_json(manifest) + b"\n")
            appended = ChainEntry(next_seq(entries), archive_id)
            try:
                self._put(chain_key(appended.seq), f"{archive_id}\n".encode(), create=True)
            except _Taken:
                continue  # another writer took this position: re-link after the new head
            try:
                self._advance_checkpoint(entries, appended, sealing)
            except ArchiveError as exc:  # the archive is published; the next append catches up
                log.error("archive %s published, but its checkpoint was not moved: %s",
                          archive_id, exc)
            return manifest
        raise ArchiveError(f"could not append to the chain in {self.location}: too much contention")

    def _advance_checkpoint(
        self, entries: list[ChainEntry], appended: ChainEntry, sealing: Sealing
    ) -> None:
        head = self.read_manifest(entries[-1].archive_id) if entries else None
        for _ in range(APPEND_ATTEMPTS):
            data, etag = self._get_tagged(CHECKPOINT_KEY)
            previous = decode_checkpoint(data) if data is not None else None
            if (
                previous is not None
                and checkpoint_problem(previous, sealing.keys) is None
                and checkpoint_count(previous) > appended.seq
            ):
                return  # an append after this one has moved it already
            checkpoint = next_checkpoint(previous, entries, head, appended, self.location, sealing)
            try:
                self._put(
                    CHECKPOINT_KEY,
                    canonical_json(checkpoint) + b"\n",
                    create=data is None,
                    if_match=etag or None,
                )
            except _Taken:
                continue  # moved meanwhile: look again
            return
        raise ArchiveError(f"could not move the checkpoint in {self.location}: too much contention")

    def read_checkpoint(self) -> JSONObject | None:
        data = self._get(CHECKPOINT_KEY)
        return None if data is None else decode_checkpoint(data)

    @contextlib.contextmanager
    def consistent(self) -> Iterator[None]:
        yield  # no lock on S3: readers read the checkpoint first, and the chain only grows

    def _put(
        self, key: str, data: bytes, *, create: bool = False, if_match: str | None = None
    ) -> None:
        extra: dict[str, object] = {"IfNoneMatch": "*"} if create else {}
        if if_match:
            extra["IfMatch"] = if_match
        if self.lock is not None:
            extra.update(self.lock.headers())
        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, **extra)
        except ClientError as exc:
            if (create or if_match) and _code(exc) in _TAKEN:
                raise _Taken from exc
            raise ArchiveError(f"cannot write {self._key(key)} to {self.location}: {exc}") from exc
        except BotoCoreError as exc:
            raise ArchiveError(f"cannot write {self._key(key)} to {self.location}: {exc}") from exc

    # --- versions (a bucket with versioning, as Object Lock requires) ------------------------
    def versioned(self) -> bool:
        try:
            status = self.client.get_bucket_versioning(Bucket=self.bucket).get("Status")
        except (BotoCoreError, ClientError):
            return False
        return bool(status == "Enabled")

    def history(self, key: str) -> tuple[list[tuple[str, Any]], list[str]]:
        """Versions of `key` (and of keys under it, for a prefix): (version id, time) of the
        versions of exactly `key`, oldest first (S3 lists them newest first; the times are
        only to the second), and every key hidden by a delete marker."""
        versions: list[tuple[str, Any]] = []
        deleted: list[str] = []
        try:
            pages = self.client.get_paginator("list_object_versions").paginate(
                Bucket=self.bucket, Prefix=self._key(key)
            )
            for page in pages:
                for item in page.get("Versions", []):
                    if item["Key"] == self._key(key):
                        versions.append((str(item["VersionId"]), item["LastModified"]))
                for marker in page.get("DeleteMarkers", []):
                    if marker.get("IsLatest"):
                        deleted.append(str(marker["Key"])[len(self.prefix) :])
        except (BotoCoreError, ClientError) as exc:
            raise ArchiveError(f"cannot list versions in {self.location}: {exc}") from exc
        return versions[::-1], sorted(deleted)

    def read_version(self, key: str, version: str) -> bytes | None:
        return self._get_tagged(key, version)[0]


class _Taken(Exception):
    """The chain position was created by another writer first."""


def _code(exc: ClientError) -> str:
    error = exc.response.get("Error", {})
    return str(error.get("Code", ""))
