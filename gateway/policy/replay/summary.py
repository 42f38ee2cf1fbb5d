"""The replay's summary: totals by decision, rule and enforcing layer, and, where the sources
recorded decisions, what would change, with the first few calls of each change. Plain text,
one fact a line (grep for `ran -> deny`), or one JSON object."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gateway.audit.commands import input_summary
from gateway.policy.replay.decide import Duplicate, Outcome, Replayed
from gateway.policy.replay.items import BadLine, NotDecidable

TOP_RULES = 10
EXAMPLES = 3
"""Calls shown for each kind of change."""
LISTED = 20
"""Calls not decided that are listed by name (all are counted)."""
_ORDER = {"deny": 0, "ask": 1, "allow": 2, "abstain": 3}


@dataclass(frozen=True, slots=True)
class Example:
    tool_use_id: str
    tool_name: str
    input: str
    where: str
    rule_id: str


@dataclass
class Tally:
    policy_hash: str
    sandbox: str
    sources: Counter[str] = field(default_factory=Counter)
    decided: int = 0
    by_decision: Counter[str] = field(default_factory=Counter)
    by_rule: Counter[tuple[str, str]] = field(default_factory=Counter)
    enforced_by: Counter[str] = field(default_factory=Counter)
    redacted: int = 0
    recorded: int = 0
    changes: Counter[tuple[str, str]] = field(default_factory=Counter)
    examples: dict[tuple[str, str], list[Example]] = field(default_factory=dict)
    not_decided: list[NotDecidable] = field(default_factory=list)
    not_decided_count: int = 0
    bad_lines: int = 0
    duplicates: int = 0

    @property
    def complete(self) -> bool:
        """Every call in the sources was decided, and every line read."""
        return not self.bad_lines and not self.not_decided_count

    def add(self, outcome: Outcome) -> None:
        if isinstance(outcome, Replayed):
            self._decided(outcome)
        elif isinstance(outcome, NotDecidable):
            self.not_decided_count += 1
            if len(self.not_decided) < LISTED:
                self.not_decided.append(outcome)
        elif isinstance(outcome, BadLine):
            self.bad_lines += 1
        elif isinstance(outcome, Duplicate):
            self.duplicates += 1

    def _decided(self, replayed: Replayed) -> None:
        decision, item = replayed.decision, replayed.item
        self.decided += 1
        self.by_decision[decision.kind] += 1
        if decision.rule_id:
            self.by_rule[(decision.kind, decision.rule_id)] += 1
        self.enforced_by[decision.enforced_by] += 1
        self.redacted += item.redacted
        if item.recorded is None:
            return
        self.recorded += 1
        if not replayed.changed:
            return
        change = (item.recorded.decision, decision.kind)
        self.changes[change] += 1
        shown = self.examples.setdefault(change, [])
        if len(shown) < EXAMPLES:
            call = item.call
            shown.append(Example(call.tool_use_id, call.tool_name,
                                 input_summary(dict(call.tool_input)), item.where,
                                 decision.rule_id))

    def text(self) -> list[str]:
        calls = self.decided + self.not_decided_count
        kinds = ", ".join(f"{kind} {n}" for kind, n in self.sources.most_common())
        sources = sum(self.sources.values())
        lines = [
            f"policy replay: {_count(calls, 'call')} from {_count(sources, 'source')} ({kinds}); "
            f"policy sha256:{self.policy_hash[:12]}, sandbox: {self.sandbox}",
            f"decided {self.decided}, not decided {self.not_decided_count}, bad lines "
            f"{self.bad_lines}, seen before {self.duplicates}",
            "by decision:",
            *(f"  {kind:<8} {n}" for kind, n in _by_severity(self.by_decision)),
            f"by rule (top {TOP_RULES}):" if self.by_rule else "by rule: none matched",
            *(f"  {kind:<8} {n:>6}  {rule}"
              for (kind, rule), n in self.by_rule.most_common(TOP_RULES)),
            "enforced by:",
            *(f"  {layer:<8} {n}" for layer, n in sorted(self.enforced_by.items())),
        ]
        if self.redacted:
            lines.append(f"decided on redacted input: {self.redacted} (a rule matching a "
                         "secret itself cannot match its redaction)")
        lines += self._change_lines()
        if self.not_decided:
            more = self.not_decided_count - len(self.not_decided)
            lines.append(f"not decided: {self.not_decided_count}")
            lines += [f"  {n.where}  {n.tool_use_id or '-'}  {n.tool_name}: {n.reason}"
                      for n in self.not_decided]
            if more:
                lines.append(f"  ... and {more} more")
        return lines

    def _change_lines(self) -> list[str]:
        if not self.recorded:
            return ["changes: the sources recorded no decisions to compare with"]
        total = sum(self.changes.values())
        lines = [f"changes from the recorded decisions: {total} of {self.recorded} "
                 "recorded calls"]
        for (before, after), n in self.changes.most_common():
            lines.append(f"  {before} -> {after}: {n}")
            for e in self.examples[(before, after)]:
                rule = f"  [{e.rule_id}]" if e.rule_id else ""
                lines.append(f"    {e.tool_use_id or '-'}  {e.tool_name}  {e.input}  "
                             f"({e.where}){rule}")
        return lines

    def as_json(self) -> dict[str, Any]:
        return {
            "policy": self.policy_hash,
            "sandbox": self.sandbox,
            "sources": dict(self.sources),
            "calls": self.decided + self.not_decided_count,
            "decided": self.decided,
            "not_decided": self.not_decided_count,
            "bad_lines": self.bad_lines,
            "seen_before": self.duplicates,
            "by_decision": dict(_by_severity(self.by_decision)),
            "by_rule": [{"decision": kind, "rule_id": rule, "count": n}
                        for (kind, rule), n in self.by_rule.most_common()],
            "enforced_by": dict(self.enforced_by),
            "redacted": self.redacted,
            "recorded": self.recorded,
            "changes": [
                {"recorded": before, "would_be": after, "count": n,
                 "examples": [{"tool_use_id": e.tool_use_id, "tool_name": e.tool_name,
                               "input": e.input, "where": e.where, "rule_id": e.rule_id}
                              for e in self.examples[(before, after)]]}
                for (before, after), n in self.changes.most_common()
            ],
            "not_decided_calls": [
                {"where": n.where, "tool_use_id": n.tool_use_id, "tool_name": n.tool_name,
                 "reason": n.reason} for n in self.not_decided
            ],
        }


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _by_severity(counts: Counter[str]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda kv: _ORDER.get(kv[0], 9))
