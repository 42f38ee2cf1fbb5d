"""The one interface every archive store implements, and choosing one from settings.

Layout, the same keys in a directory or under an S3 prefix:
  objects/<ab>/<sha256>.zst   zstd frames, named by the sha256 of their decompressed bytes
  manifests/<archive id>.json one manifest per archive (its id is its own hash)
  chain/<seq, 12 digits>      the archive id at that position: the ordered, verifiable index
  checkpoint.json             the archive count and head, rewritten after every append
An archive becomes visible only when its chain entry is written, after its objects and manifest.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol

from gateway.archive.chain import ChainEntry
from gateway.archive.sealing import Sealing
from gateway.compaction import CompactionSettings
from gateway.env import gateway_home
from gateway.errors import ConfigError
from gateway.types import JSONObject

if TYPE_CHECKING:
    from gateway.archive.manifest import Manifest

ManifestBuilder = Callable[[str, int], "Manifest"]
"""Given the previous archive's hash and the new one's 1-based position, return the linked
manifest to append."""


def object_key(digest: str) -> str:
    return f"objects/{digest[:2]}/{digest}.zst"


def manifest_key(archive_id: str) -> str:
    return f"manifests/{archive_id}.json"


def decode_manifest(data: bytes) -> JSONObject:
    """A stored manifest; `{"unreadable": True}` when it is not a JSON object (verify says so)."""
    try:
        value = json.loads(data)
    except ValueError:
        return {"unreadable": True}
    return value if isinstance(value, dict) else {"unreadable": True}


def decode_checkpoint(data: bytes) -> JSONObject:
    """A stored checkpoint; {} when it is not a JSON object (verify says it is untrustworthy)."""
    value = decode_manifest(data)
    return {} if value.get("unreadable") is True else value


def chain_key(seq: int) -> str:
    return f"chain/{seq:012d}"


class Staged(Protocol):
    """A temporary object being written; invisible until `commit`."""

    file: BinaryIO

    def commit(self, digest: str) -> None: ...


class ArchiveStore(Protocol):
    location: str
    """Where the store is, for messages: a directory or s3://bucket/prefix."""

    def stage(self) -> AbstractContextManager[Staged]:
        """A temp file for one object; discarded on exit unless committed."""
        ...

    def open_object(self, digest: str) -> BinaryIO:
        """The compressed object; ArchiveError when missing."""
        ...

    def read_manifest(self, archive_id: str) -> JSONObject | None: ...

    def entries(self) -> list[ChainEntry]:
        """The chain index in order."""
        ...

    def append(self, build: ManifestBuilder, sealing: Sealing) -> Manifest:
        """Atomically link a manifest after the current head and publish it, then move the
        checkpoint; returns the manifest."""
        ...

    def read_checkpoint(self) -> JSONObject | None:
        """The store's checkpoint; None when there is none, {} when it is unreadable."""
        ...

    def consistent(self) -> AbstractContextManager[None]:
        """Hold appends off (where the store can) while the chain index and checkpoint are
        read together."""
        ...


def local_root(settings: CompactionSettings, home: Path | None = None) -> Path:
    if settings.path:
        return Path(settings.path).expanduser()
    return (home if home is not None else gateway_home()) / "archive"


def open_store(settings: CompactionSettings, home: Path | None = None) -> ArchiveStore:
    """The store the settings name; boto3 is imported only for S3 (the `s3` extra)."""
    if settings.store == "s3":
        try:
            from gateway.archive.s3 import S3Store
        except ModuleNotFoundError as exc:
            if exc.name not in ("boto3", "botocore"):
                raise
            raise ConfigError(
                f"compaction store s3 needs the {exc.name} package: "
                "pip install 'agent-gateway[s3]'"
            ) from None
        return S3Store.from_settings(settings)
    from gateway.archive.local import LocalStore

    return LocalStore(local_root(settings, home))
