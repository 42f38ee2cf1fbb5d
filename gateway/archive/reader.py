"""Reading a store back: resolving ids, streaming objects out, verifying everything."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import zstandard

from gateway.archive.chain import Break, ChainEntry, check_link
from gateway.archive.manifest import object_digests
from gateway.archive.store import ArchiveStore
from gateway.archive.streaming import decompress_to, object_digest
from gateway.errors import ArchiveError
from gateway.hashchain import GENESIS

MIN_PREFIX = 4


def resolve(store: ArchiveStore, prefix: str) -> tuple[ChainEntry, dict[str, Any]]:
    """The chain entry and manifest of the one archive whose id starts with `prefix`."""
    prefix = prefix.strip().lower()
    if len(prefix) < MIN_PREFIX:
        raise ArchiveError(f"archive id {prefix!r} is too short (at least {MIN_PREFIX} hex digits)")
    matches = [e for e in store.entries() if e.archive_id.startswith(prefix)]
    if not matches:
        raise ArchiveError(f"no archive {prefix!r} in {store.location}")
    if len(matches) > 1:
        raise ArchiveError(f"archive id {prefix!r} is ambiguous ({len(matches)} archives)")
    manifest = store.read_manifest(matches[0].archive_id)
    if manifest is None:
        raise ArchiveError(f"archive {matches[0].archive_id}: manifest missing")
    return matches[0], manifest


def manifests(store: ArchiveStore) -> Iterator[tuple[ChainEntry, dict[str, Any] | None]]:
    for entry in store.entries():
        yield entry, store.read_manifest(entry.archive_id)


def copy_object(store: ArchiveStore, digest: str, write: Callable[[bytes], object]) -> None:
    """Stream one object, decompressed, through `write`; refuse it if its hash is wrong."""
    with store.open_object(digest) as src:
        try:
            actual = decompress_to(src, write)
        except zstandard.ZstdError as exc:
            raise ArchiveError(f"object {digest} is corrupted: {exc}") from exc
    if actual != digest:
        raise ArchiveError(f"object {digest} is corrupted: its content hashes to {actual}")


def check_object(store: ArchiveStore, digest: str) -> str | None:
    """Why an object fails verification, or None."""
    try:
        with store.open_object(digest) as src:
            actual = object_digest(src)
    except ArchiveError:
        return f"object {digest[:16]} missing"
    except zstandard.ZstdError as exc:
        return f"object {digest[:16]} corrupted ({exc})"
    if actual != digest:
        return f"object {digest[:16]} corrupted (content hashes to {actual[:16]})"
    return None


def verify(store: ArchiveStore) -> tuple[int, Break | None]:
    """Check every link and every object in chain order; the count and the first break."""
    prev = GENESIS
    checked: set[str] = set()
    count = 0
    for expected_seq, (entry, manifest) in enumerate(manifests(store)):
        broken = check_link(entry, expected_seq, prev, manifest)
        if broken is not None or manifest is None:
            return count, broken or Break(entry.seq, entry.archive_id, "manifest missing")
        for digest in object_digests(manifest):
            if digest in checked:
                continue
            problem = check_object(store, digest)
            if problem is not None:
                return count, Break(entry.seq, entry.archive_id, problem)
            checked.add(digest)
        prev = entry.archive_id
        count += 1
    return count, None
