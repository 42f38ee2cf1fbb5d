"""Pure: the checkpoint kept beside a chain, and what it says about the chain it covers.

A checkpoint names how many items the chain holds and the hash of the last one. It is
rewritten after every append, numbered (`seq`) and linked to the checkpoint it replaced
(`prev_hash`), and with a key it carries a MAC. So:
- without a key, it catches a chain cut at the tail or emptied, and edits that did not also
  rewrite the checkpoint;
- with a key, a checkpoint cannot be forged, only replaced by an older genuine one; a writer
  still running notices that, and the off-host copy of the chain shows it to anyone;
- an `alarm` (what a writer found wrong when it appended) is carried into every later
  checkpoint, so the next append does not paper over it;
- before an item is written, the checkpoint announces it (`next`: its hash, where it starts
  and its length), and is confirmed once it is written. A writer stopped between the two (a
  SIGKILL, a crash) leaves exactly the announced item past the checkpoint, or part of it:
  that is told apart from an item added behind the gateway's back, which no checkpoint
  announced, without a key. What a writer stopped there can lose unnoticed is the one item
  it had not confirmed, which it never acted on (an answer is given after the confirmation).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, NamedTuple, NotRequired, TypedDict, TypeGuard, cast

from gateway.hashchain import GENESIS, HASH_KEY, link_problem
from gateway.integrity.keys import KeySet, sealed_line

FORMAT = "agent-gateway.checkpoint/1"
ALARM = "alarm"
NEXT = "next"

Stored = Mapping[str, object]
"""A checkpoint as read back (a JSON object from disk): trusted only once checked."""


class Alarm(TypedDict):
    at: int
    """The first position found wrong (1-based)."""
    reason: str
    time: str


class Announced(TypedDict):
    """The item a writer is about to append, announced before it is written."""

    hash: str
    at: int
    """Where its line starts: the chain file's length before the write."""
    bytes: int
    """Its line's length, newline included."""


class Checkpoint(TypedDict):
    """A checkpoint as written: `checkpoint.json` / `audit.jsonl.checkpoint`."""

    format: Literal["agent-gateway.checkpoint/1"]
    chain: str
    seq: int
    count: int
    head: str
    time: str
    alarm: NotRequired[Alarm]
    next: NotRequired[Announced]
    prev_hash: str
    hash: str
    key_id: NotRequired[str]
    mac: NotRequired[str]


class Finding(NamedTuple):
    """The first bad position in a chain (1-based) and what is wrong there."""

    position: int
    message: str

    def __str__(self) -> str:
        return self.message


def checkpoint_line(
    *,
    chain: str,
    count: int,
    head: str,
    time: str,
    previous: Stored | None,
    keys: KeySet | None,
    alarm: Alarm | None = None,
    announce: Announced | None = None,
    confirms: bool = False,
) -> SealedCheckpoint:
    """The checkpoint after an append (`previous` is the one it replaces, None for the first),
    or before one, announcing the item about to be written (`announce`), and the same as
    JSON, serialized once. A checkpoint that `confirms` the announcement it replaces keeps its
    number: checkpoints are numbered by appends."""
    number = _int(previous.get("seq")) if previous else 0
    body: dict[str, object] = {
        "format": FORMAT,
        "chain": chain,
        "seq": number if confirms and number else number + 1,
        "count": count,
        "head": head,
        "time": time,
    }
    carried = alarm or (previous.get(ALARM) if previous else None)
    if isinstance(carried, Mapping) and carried:
        body[ALARM] = dict(carried)
    if announce is not None:
        body[NEXT] = dict(announce)
    prev_hash = str(previous.get(HASH_KEY, GENESIS)) if previous else GENESIS
    sealed, line = sealed_line(body, prev_hash, keys)
    return SealedCheckpoint(cast(Checkpoint, sealed), line)


class SealedCheckpoint(NamedTuple):
    checkpoint: Checkpoint
    line: bytes
    """The same as one line of JSON, serialized once."""


def announced(checkpoint: Stored) -> Announced | None:
    """The item a checkpoint announces (well formed), or None."""
    value = checkpoint.get(NEXT)
    if not isinstance(value, Mapping):
        return None
    digest, at, size = value.get("hash"), value.get("at"), value.get("bytes")
    if isinstance(digest, str) and _is_int(at) and _is_int(size):
        return {"hash": digest, "at": at, "bytes": size}
    return None


def announces(checkpoint: Stored, item_hash: str | None) -> bool:
    """Whether the checkpoint announced the item whose hash is `item_hash` as its next one."""
    intent = announced(checkpoint)
    return intent is not None and item_hash is not None and intent["hash"] == item_hash


def make_alarm(at: int, reason: str, time: str) -> Alarm:
    return {"at": at, "reason": reason, "time": time}


def checkpoint_problem(checkpoint: Stored, keys: KeySet | None) -> str | None:
    """Why the checkpoint itself cannot be trusted (format, hash, MAC), or None."""
    if checkpoint.get("format") != FORMAT:
        return "not a checkpoint this gateway wrote"
    if not isinstance(checkpoint.get("count"), int) or not isinstance(checkpoint.get("seq"), int):
        return "count or seq is not a number"
    problem = link_problem(checkpoint, str(checkpoint.get("prev_hash")))
    if problem is not None:
        return "edited: its hash does not match its contents"
    if keys is not None:
        return keys.check(checkpoint)
    return None


def compare(
    checkpoint: Stored,
    count: int,
    hash_at: Callable[[int], str | None],
    noun: str,
) -> Finding | None:
    """Where a chain of `count` items departs from the checkpoint, or None when it matches.

    `hash_at(position)` is the hash of the item at a 1-based position.
    """
    seq, expected = checkpoint.get("seq"), _int(checkpoint.get("count", 0))
    alarm = checkpoint.get(ALARM)
    if isinstance(alarm, Mapping):
        at = _int(alarm.get("at")) or 1
        return Finding(
            at,
            f"{noun} {at}: {alarm.get('reason', 'alarm')} (noticed when it was appended, "
            f"at {alarm.get('time', '?')}; carried by checkpoint #{seq})",
        )
    if count < expected:
        return Finding(
            count + 1,
            f"{noun} {count + 1}: missing: checkpoint #{seq} counts {expected}, "
            f"the chain holds {count}",
        )
    head_holds = not expected or hash_at(expected) == checkpoint.get("head")
    if count == expected + 1 and head_holds and announces(checkpoint, hash_at(count)):
        return None  # the item it announced: a writer stopped before confirming it
    if count > expected:
        return Finding(
            expected + 1,
            f"{noun} {expected + 1}: not covered by checkpoint #{seq}, which counts {expected}: "
            "added behind the gateway's back (or a writer stopped between an item and its "
            "checkpoint)",
        )
    if expected and hash_at(expected) != checkpoint.get("head"):
        return Finding(
            expected,
            f"{noun} {expected}: differs from the head named by checkpoint #{seq} "
            "(the chain was rewritten)",
        )
    return None


def checkpoint_finding(
    checkpoint: Stored | None,
    count: int,
    hash_at: Callable[[int], str | None],
    keys: KeySet | None,
    noun: str,
) -> Finding | None:
    """Everything the checkpoint says about the chain: missing, untrustworthy, or departed."""
    if checkpoint is None:
        if count == 0:
            return None
        return Finding(
            count,
            f"{noun} {count}: no checkpoint, so nothing shows the chain ended here "
            "(it is written with every append: deleted?)",
        )
    problem = checkpoint_problem(checkpoint, keys)
    if problem is not None:
        at = max(1, min(count, _int(checkpoint.get("count"))))
        return Finding(at, f"{noun} {at}: checkpoint #{checkpoint.get('seq', '?')}: {problem}")
    return compare(checkpoint, count, hash_at, noun)


def counted(checkpoint: Stored) -> int:
    """The item count a checkpoint states (0 when it states none: see checkpoint_problem)."""
    return _int(checkpoint.get("count"))


def number(checkpoint: Stored) -> int:
    """The checkpoint's own number, `seq` (0 when it has none)."""
    return _int(checkpoint.get("seq"))


def _int(value: object) -> int:
    return value if _is_int(value) else 0


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def checkpoint_summary(checkpoint: Stored | None, keys: KeySet | None) -> str:
    """`, checkpoint #12 matches, MACs checked (key ab12...)` for an OK line."""
    if not checkpoint:
        return ""
    if keys is not None:
        sealed = f", MACs checked (key {checkpoint.get('key_id')})"
    elif checkpoint.get("key_id"):
        sealed = ", MACs not checked (no key)"
    else:
        sealed = ", no MACs (no key)"
    return f", checkpoint #{checkpoint.get('seq')} matches{sealed}"
