"""A run's compactions as Claude Code's stream tells them, held until a result prices them.

A compaction opens at `status: compacting` (or, unannounced, at its `compact_boundary`) and
ends at the boundary or a failed `compact_result`; the PreCompact hook's archive outcome may
come before or after it opens. Claude Code streams nothing of the summary request, so a
finished compaction waits for the query's result: what its `model_usage_since_last_result`
counts beyond the chats the stream showed is the compaction's own chat. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.telemetry.compaction import Compaction, unaccounted_usage
from gateway.telemetry.ids import IdSource
from gateway.telemetry.model import SpanSpec
from gateway.telemetry.pricing import Usage
from gateway.telemetry.tree import Tree


@dataclass(slots=True)
class StreamCompactions:
    ids: IdSource
    current: Compaction | None = None
    opened: int = 0
    pending_archive: tuple[str | None, str | None, str | None] | None = None
    """An archive outcome that came before its compaction opened."""
    held: list[Compaction] = field(default_factory=list)
    """Finished compactions waiting for the result that says what they cost."""
    costs: list[float | None] = field(default_factory=list)
    chat_costs: list[float | None] = field(default_factory=list)
    """The costs of the compactions' own chats (in the root's sum of chat costs)."""

    def open(self, start_ns: int) -> Compaction:
        self.opened += 1
        comp = Compaction(span_id=self.ids.span_id("compaction", str(self.opened)),
                          start_ns=start_ns)
        if self.pending_archive is not None:
            comp.archive_id, comp.archive_error, comp.trigger = self.pending_archive
            self.pending_archive = None
        self.current = comp
        return comp

    def archived(self, archive_id: str | None, error: str | None, trigger: str | None) -> None:
        """PreCompact handled: the transcript's archive id, or why archiving failed."""
        comp = self.current
        if comp is not None and comp.archive_id is None and comp.archive_error is None:
            comp.archive_id, comp.archive_error = archive_id, error
            comp.trigger = comp.trigger or trigger
        else:
            self.pending_archive = (archive_id, error, trigger)

    def status(self, msg: Mapping[str, Any], at_ns: int) -> None:
        """`status: compacting` opens one; a `compact_result` other than success ends it."""
        if msg.get("status") == "compacting":
            if self.current is None:
                self.open(at_ns)
            return
        outcome = msg.get("compact_result")
        comp = self.current
        if outcome is None or comp is None:
            return
        comp.end_ns = at_ns
        comp.result = str(outcome)
        if outcome != "success":
            comp.error = str(msg.get("compact_error") or outcome)
            self.hold()
        # on success, compact_boundary follows with the metadata

    def boundary(self, meta: Mapping[str, Any], at_ns: int) -> None:
        """`compact_boundary`: the compaction succeeded, with its tokens and trigger."""
        comp = self.current
        if comp is None:
            duration = meta.get("duration_ms")
            start = at_ns - int(duration * 1e6) if isinstance(duration, int | float) else at_ns
            comp = self.open(start)
            comp.end_ns, comp.result = at_ns, "success"
        comp.trigger = str(meta.get("trigger") or comp.trigger or "")
        comp.pre_tokens = meta.get("pre_tokens")
        comp.post_tokens = meta.get("post_tokens")
        comp.duration_ms = meta.get("duration_ms")
        comp.end_ns = comp.end_ns or at_ns
        comp.result = comp.result or "success"
        self.hold()

    def hold(self) -> None:
        """The compaction finished; its span waits for the result that prices it."""
        if self.current is not None:
            self.held.append(self.current)
            self.current = None

    def unstreamed_usage(
        self, result: Mapping[str, Any], chats: Iterable[tuple[str, Usage, bool]]
    ) -> dict[str, Usage] | None:
        """What this result's query spent beyond the chats the stream showed (model, usage,
        exact): the compaction requests. None when that cannot be known."""
        since = result.get("model_usage_since_last_result")
        if not self.held or not isinstance(since, Mapping):
            return None
        window = list(chats)
        if not all(exact for _, _, exact in window):
            return None  # a subagent's final usage comes later, from its transcript
        return unaccounted_usage(since, [(model, usage) for model, usage, _ in window])

    def release(self, tree: Tree, usage: dict[str, Usage] | None) -> list[SpanSpec]:
        """The held compactions, the last with its own chat(s): the summary request's tokens,
        priced like any chat."""
        held, self.held = self.held, []
        out: list[SpanSpec] = []
        costs: list[float | None] = []
        for model, tokens in (usage or {}).items():
            spec, cost = tree.compaction_chat(held[-1], model, tokens)
            out.append(spec)
            costs.append(cost)
        self.chat_costs += costs
        total = None if usage is None or None in costs else sum(c for c in costs if c)
        for comp in held:
            comp.cost_usd = total / len(held) if total is not None else None
            self.costs.append(comp.cost_usd)
            out.append(tree.compaction(comp))
        return out

    def finish(self, tree: Tree, at_ns: int) -> list[SpanSpec]:
        """The stream ended: an open compaction is incomplete; nothing prices the held ones."""
        comp = self.current
        if comp is not None:
            comp.end_ns = comp.end_ns or at_ns
            comp.incomplete = comp.result is None
            self.hold()
        return self.release(tree, None)
