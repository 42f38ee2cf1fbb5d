"""Each recorded call decided as the hook would decide it in a session under the policy (with
`sandbox: required`, a sandboxed session), through `explain` only: nothing is run, appended
to the audit log or exported. Then compared with the decision the source recorded."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from gateway.env import environment
from gateway.errors import one_line
from gateway.policy.compiled import Policy
from gateway.policy.evaluate import explain
from gateway.policy.replay.items import (
    CLAUDE_CODE_DENIED,
    RAN,
    BadLine,
    Item,
    NotDecidable,
    Recorded,
    Replayable,
)
from gateway.types import Decision, DecisionKind


@dataclass(frozen=True, slots=True)
class Replayed:
    item: Replayable
    decision: Decision
    changed: bool
    """The decision would change what became of the call (False with nothing recorded)."""


@dataclass(frozen=True, slots=True)
class Duplicate:
    """A call seen before in this replay (the same tool_use_id): decided once."""

    where: str
    tool_use_id: str


Outcome = Replayed | NotDecidable | BadLine | Duplicate


def changed(recorded: Recorded | None, would: DecisionKind) -> bool:
    """Whether `would` changes what became of a call. A hook decision recorded (an audit log,
    or a transcript of a session under a gateway) changes when the decision does; where only
    Claude Code's own outcome is known, when the effect does: a call that ran changes if it
    would now be denied or asked, one Claude Code refused if it would now be allowed or
    asked, and `abstain` leaves the call to Claude Code's flow, as it was."""
    if recorded is None:
        return False
    if recorded.decision == RAN:
        return would in ("deny", "ask")
    if recorded.decision == CLAUDE_CODE_DENIED:
        return would in ("allow", "ask")
    return recorded.decision != would


def replay(policy: Policy, items: Iterable[Item], seen: set[str] | None = None, *,
           hook_only: bool = False) -> Iterator[Outcome]:
    """Each call decided; `seen` holds the tool_use_ids decided so far (across sources: a
    session's transcript and the audit log of the same calls are decided once).
    `hook_only`: as in sessions without the OS sandbox, whatever the policy says."""
    sandboxed = policy.sandbox == "required" and not hook_only
    seen = set() if seen is None else seen
    for item in items:
        if not isinstance(item, Replayable):
            yield item
            continue
        call = item.call
        if call.tool_use_id:
            if call.tool_use_id in seen:
                yield Duplicate(item.where, call.tool_use_id)
                continue
            seen.add(call.tool_use_id)
        if not call.environ:  # as the hook decides: in this environment (`~` is its $HOME)
            call = dataclasses.replace(call, environ=environment())
        try:
            decision = explain(policy, call, sandboxed=sandboxed).decision
        except Exception as exc:  # the hook fails closed here; replay reports it
            yield NotDecidable(item.where, call.tool_use_id, call.tool_name,
                               f"could not decide: {one_line(exc, typed=True)}")
            continue
        yield Replayed(item, decision, changed(item.recorded, decision.kind))


def jsonl_line(replayed: Replayed) -> str:
    """The `--jsonl` line of one decided call."""
    call, decision = replayed.item.call, replayed.decision
    return json.dumps({
        "tool_use_id": call.tool_use_id,
        "tool_name": call.tool_name,
        "decision": decision.kind,
        "rule_id": decision.rule_id,
        "reason": decision.reason,
        "enforced_by": decision.enforced_by,
    }, ensure_ascii=False)
