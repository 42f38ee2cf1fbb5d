"""The S3-compatible store (AWS, MinIO, ...): objects are uploaded whole, so a key exists only
once complete; the chain entry is created with If-None-Match so concurrent appends never
overwrite each other (the loser re-links after the new head and retries)."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from typing import Any, BinaryIO

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from gateway.archive.chain import ChainEntry, head_hash, next_seq
from gateway.archive.config import CompactionSettings
from gateway.archive.store import (
    ManifestBuilder,
    chain_key,
    decode_manifest,
    manifest_key,
    object_key,
)
from gateway.errors import ArchiveError, ConfigError
from gateway.hashchain import canonical_json

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


class S3Store:
    def __init__(self, client: Any, bucket: str, prefix: str = "") -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.location = f"s3://{bucket}/{self.prefix}"

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
        return cls(client, settings.bucket, settings.prefix)

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
            self.client.upload_fileobj(body, self.bucket, self._key(key))
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
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if _code(exc) in _MISSING:
                return None
            raise ArchiveError(f"cannot read {self._key(key)}: {exc}") from exc
        except BotoCoreError as exc:
            raise ArchiveError(f"cannot read {self._key(key)}: {exc}") from exc
        data: bytes = response["Body"].read()
        return data

    def read_manifest(self, archive_id: str) -> dict[str, Any] | None:
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

    def append(self, build: ManifestBuilder) -> dict[str, Any]:
        for _ in range(APPEND_ATTEMPTS):
            entries = self.entries()
            manifest = build(head_hash(entries))
            archive_id = str(manifest["hash"])
            self._put(manifest_key(archive_id), canonical_json(manifest) + b"\n")
            try:
                self._put(chain_key(next_seq(entries)), f"{archive_id}\n".encode(), create=True)
            except _Taken:
                continue  # another writer took this position: re-link after the new head
            return manifest
        raise ArchiveError(f"could not append to the chain in {self.location}: too much contention")

    def _put(self, key: str, data: bytes, *, create: bool = False) -> None:
        extra = {"IfNoneMatch": "*"} if create else {}
        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, **extra)
        except ClientError as exc:
            if create and _code(exc) in _TAKEN:
                raise _Taken from exc
            raise ArchiveError(f"cannot write {self._key(key)} to {self.location}: {exc}") from exc
        except BotoCoreError as exc:
            raise ArchiveError(f"cannot write {self._key(key)} to {self.location}: {exc}") from exc


class _Taken(Exception):
    """The chain position was created by another writer first."""


def _code(exc: ClientError) -> str:
    error = exc.response.get("Error", {})
    return str(error.get("Code", ""))
