"""Pure: the checkpoint an archive store writes after each append, and what it flags.

Written after the chain entry, so it may lag the chain for the moment an append is in flight
(on S3 several appenders can be); it must never be ahead of it, nor name another head.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gateway.archive.chain import NOUN, ChainEntry
from gateway.integrity.checkpoint import (
    Alarm,
    Checkpoint,
    checkpoint_line,
    checkpoint_problem,
    make_alarm,
)
from gateway.integrity.checkpoint import counted as checkpoint_count
from gateway.integrity.keys import KeySet
from gateway.types import JSON

CHECKPOINT_KEY = "checkpoint.json"


@dataclass(frozen=True, slots=True)
class Sealing:
    """What an append seals with: the key set (or None) and the time it happens."""

    keys: KeySet | None
    time: str


def next_checkpoint(
    previous: Mapping[str, JSON] | None,
    entries: Sequence[ChainEntry],
    head_manifest: Mapping[str, JSON] | None,
    appended: ChainEntry,
    location: str,
    sealing: Sealing,
) -> Checkpoint:
    """The checkpoint after `appended` joined `entries`; an alarm when the store and its
    checkpoint disagreed before it (carried on from then on)."""
    count = len(entries)
    alarm: Alarm | None = None
    if previous is None:
        if count and head_manifest is not None and "seq" in head_manifest:
            alarm = make_alarm(count, "the checkpoint was missing (deleted?) when the next "
                               f"{NOUN} was appended", sealing.time)
    elif (problem := checkpoint_problem(previous, sealing.keys)) is not None:
        alarm = make_alarm(max(1, count), f"the checkpoint could not be trusted: {problem}",
                           sealing.time)
        previous = None
    else:
        counted = checkpoint_count(previous)
        if counted > count:
            alarm = make_alarm(
                count + 1,
                f"the store held {count} {NOUN}s where checkpoint #{previous['seq']} counted "
                f"{counted} (deleted behind the gateway's back)",
                sealing.time,
            )
        elif counted and entries[counted - 1].archive_id != previous.get("head"):
            alarm = make_alarm(
                counted,
                f"the {NOUN} at checkpoint #{previous['seq']}'s head was replaced",
                sealing.time,
            )
    checkpoint, _ = checkpoint_line(
        chain=f"{NOUN}:{location}",
        count=count + 1,
        head=appended.archive_id,
        time=sealing.time,
        previous=previous,
        keys=sealing.keys,
        alarm=alarm,
    )
    return checkpoint
