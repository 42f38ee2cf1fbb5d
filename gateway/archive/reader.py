"""Reading a store back: resolving ids, streaming objects out, verifying everything."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

import zstandard

from gateway.archive.chain import NOUN, Break, ChainEntry, check_link
from gateway.archive.manifest import object_digests
from gateway.archive.sealing import CHECKPOINT_KEY
from gateway.archive.store import ArchiveStore, decode_checkpoint
from gateway.archive.streaming import decompress_to, object_digest
from gateway.errors import ArchiveError
from gateway.hashchain import GENESIS, MAC_KEY
from gateway.integrity.checkpoint import checkpoint_finding
from gateway.integrity.keys import FROM_ENV, KeyChoice, KeySet, resolve_keys
from gateway.types import JSON, JSONObject

MIN_PREFIX = 4


class Stored(NamedTuple):
    """One archive as the store holds it: its chain entry and its manifest (as read)."""

    entry: ChainEntry
    manifest: JSONObject


def resolve(store: ArchiveStore, prefix: str) -> Stored:
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
    return Stored(matches[0], manifest)


def manifests(store: ArchiveStore) -> Iterator[tuple[ChainEntry, JSONObject | None]]:
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


@dataclass(frozen=True)
class StoreReport:
    count: int
    """Archives verified before the first break (all of them when there is none)."""
    broken: Break | None
    checkpoint: Mapping[str, JSON] | None = None
    notes: tuple[str, ...] = ()
    keys: KeySet | None = None


def verify(store: ArchiveStore, keys: KeyChoice = FROM_ENV) -> tuple[int, Break | None]:
    report = verify_store(store, keys)
    return report.count, report.broken


def verify_store(
    store: ArchiveStore, keys: KeyChoice = FROM_ENV, *, objects: bool = True
) -> StoreReport:
    """Every link, object and MAC in chain order, then the checkpoint (and on a versioned S3
    bucket, the versions behind both); the first bad position. `objects=False` skips reading
    the objects back (what `show` and `export` check before printing one archive)."""
    key_set = resolve_keys(keys)
    with store.consistent():  # held only for the index: manifests and objects never change
        # The checkpoint first: on S3 the chain may grow meanwhile, never shrink.
        checkpoint = store.read_checkpoint()
        entries = store.entries()
        if checkpoint and _int(checkpoint.get("count")) < len(entries):
            checkpoint = store.read_checkpoint()  # an append was in flight: it has moved since
    count, broken, last = _walk(store, entries, key_set, objects)
    findings = [broken] if broken is not None else []
    notes: list[str] = []
    if checkpoint is None and last is not None and "seq" not in last:
        notes.append("no checkpoint: written by a gateway before checkpoints; the newest "
                     "archive is not anchored until the next one")
    else:
        found = checkpoint_finding(
            checkpoint,
            len(entries),
            lambda n: entries[n - 1].archive_id if 0 < n <= len(entries) else None,
            key_set,
            NOUN,
        )
        if found is not None:
            at = found.position
            archive = entries[at - 1].archive_id if 0 < at <= len(entries) else ""
            findings.append(Break(at, archive, found.message.split(": ", 1)[1]))
    if isinstance(store, VersionedStore) and store.versioned():
        findings.extend(version_breaks(store))
    if key_set is None and last is not None and MAC_KEY in last:
        notes.append("MACs not checked: no key (set AGENT_GATEWAY_AUDIT_KEY_FILE)")
    first = min(findings, key=lambda b: b.position) if findings else None
    return StoreReport(count, first, checkpoint, tuple(notes), key_set)


def _walk(
    store: ArchiveStore, entries: list[ChainEntry], keys: KeySet | None, objects: bool = True
) -> tuple[int, Break | None, JSONObject | None]:
    prev = GENESIS
    checked: set[str] = set()
    manifest: JSONObject | None = None
    for count, entry in enumerate(entries):
        manifest = store.read_manifest(entry.archive_id)
        broken = check_link(entry, count, prev, manifest, keys)
        if broken is not None or manifest is None:
            return count, broken or Break(count + 1, entry.archive_id, "manifest missing"), None
        for digest in object_digests(manifest) if objects else ():
            if digest in checked:
                continue
            problem = check_object(store, digest)
            if problem is not None:
                return count, Break(count + 1, entry.archive_id, problem), None
            checked.add(digest)
        prev = entry.archive_id
    return len(entries), None, manifest


@runtime_checkable
class VersionedStore(Protocol):
    """A store that can show its history (S3 with versioning, as Object Lock requires)."""

    def versioned(self) -> bool: ...

    def history(self, key: str) -> tuple[list[tuple[str, Any]], list[str]]: ...

    def read_version(self, key: str, version: str) -> bytes | None: ...


def version_breaks(store: VersionedStore) -> list[Break]:
    """What the versions of a versioned bucket show: chain entries or the checkpoint hidden by
    a delete marker, and a checkpoint version counting fewer archives than an earlier one."""
    found: list[Break] = []
    _, deleted = store.history("chain/")
    for key in deleted:
        name = key.rsplit("/", 1)[-1]
        if name.isdigit():
            found.append(Break(int(name) + 1, "", "chain entry deleted (a delete marker hides "
                               "it; the earlier version is still in the bucket)"))
    versions, hidden = store.history(CHECKPOINT_KEY)
    highest, highest_seq = 0, None
    for version, when in versions:
        data = store.read_version(CHECKPOINT_KEY, version)
        counted = _int(decode_checkpoint(data or b"").get("count"))
        if counted < highest:
            found.append(Break(counted + 1, "", f"checkpoint rolled back: the version of {when} "
                               f"counts {counted}, after checkpoint #{highest_seq} counted "
                               f"{highest}"))
        elif counted > highest:
            highest = counted
            highest_seq = decode_checkpoint(data or b"").get("seq")
    if CHECKPOINT_KEY in hidden:
        found.append(Break(max(1, highest), "", "checkpoint deleted (a delete marker hides it)"))
    return found


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
