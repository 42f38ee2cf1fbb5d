"""`agent-gateway trace show [SESSION]`: the latest (or a session's) trace from the local span
file, drawn as a tree with durations, tokens, cost and decisions."""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from gateway.telemetry import attributes as A
from gateway.telemetry.model import SpanSpec
from gateway.telemetry.spanfile import read_span_file, span_file_path
from gateway.telemetry.tools import DECISION_UNKNOWN


def select_trace(spans: Sequence[SpanSpec], session: str | None) -> list[SpanSpec]:
    """The spans of the trace that ended last (optionally: whose conversation id matches)."""
    by_trace: dict[int, list[SpanSpec]] = defaultdict(list)
    for span in spans:
        by_trace[span.trace_id].append(span)
    candidates = [
        members
        for members in by_trace.values()
        if session is None
        or any(s.attributes.get(A.GEN_AI_CONVERSATION_ID) == session for s in members)
    ]
    if not candidates:
        return []
    return max(candidates, key=lambda members: max(s.end_ns for s in members))


def _ms(span: SpanSpec) -> str:
    ms = span.duration_ns / 1e6
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.0f} ms"


def _usd(value: object) -> str:
    if not isinstance(value, int | float):
        return "?"
    if abs(value) < 5e-7:  # rounds to zero: never "$-0"
        return "$0"
    sign = "-" if value < 0 else ""
    return f"{sign}${abs(value):.6f}".rstrip("0").rstrip(".")


def span_label(span: SpanSpec) -> Text:
    """One line: name, duration, then what matters for the span's kind."""
    a = span.attributes
    text = Text()
    text.append(span.name, style="bold red" if span.status.code == "error" else "bold")
    text.append(f"  {_ms(span)}", style="cyan")
    parts: list[str] = []
    if A.GEN_AI_USAGE_INPUT_TOKENS in a:
        tokens = f"in {a[A.GEN_AI_USAGE_INPUT_TOKENS]}"
        cache_read = a.get(A.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS) or 0
        cache_write = a.get(A.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS) or 0
        if cache_read or cache_write:
            tokens += f" (cache read {cache_read}, write {cache_write})"
        tokens += f" out {a.get(A.GEN_AI_USAGE_OUTPUT_TOKENS, '?')}"
        parts.append(tokens)
    reasons = a.get(A.GEN_AI_RESPONSE_FINISH_REASONS)
    if isinstance(reasons, tuple) and A.RESULT_SUBTYPE not in a:
        parts.append(",".join(reasons))
    if A.GEN_AI_USAGE_COST in a:
        parts.append(_usd(a[A.GEN_AI_USAGE_COST]))
    if A.TURN_INDEX in a:
        parts.append(f"#{a[A.TURN_INDEX]}")
    permission = a.get(A.TOOL_PERMISSION_DECISION)
    if A.POLICY_DECISION in a and not (permission and a[A.POLICY_DECISION] == DECISION_UNKNOWN):
        rule = a.get(A.POLICY_RULE_ID)
        parts.append(f"policy {a[A.POLICY_DECISION]}" + (f" [{rule}]" if rule else ""))
        if a.get(A.POLICY_WOULD_DENY):
            parts.append("would deny")
        if a.get(A.POLICY_ENFORCED_BY) == "sandbox":
            parts.append("left to the OS sandbox")
    elif permission:  # Claude Code decided, not this gateway
        parts.append(f"{permission} ({a.get(A.TOOL_PERMISSION_SOURCE, '?')})")
    if A.COMPACTION_TRIGGER in a or A.COMPACTION_RESULT in a:
        parts.append(
            f"{a.get(A.COMPACTION_TRIGGER, '?')} {a.get(A.COMPACTION_PRE_TOKENS, '?')}"
            f" -> {a.get(A.COMPACTION_POST_TOKENS, '?')} tokens"
        )
        if A.COMPACTION_ARCHIVE_ID in a:
            parts.append(f"archive {a[A.COMPACTION_ARCHIVE_ID]}")
        if A.COMPACTION_COST_USD in a:
            parts.append(_usd(a[A.COMPACTION_COST_USD]))
    if A.RESULT_SUBTYPE in a:
        parts.append(f"{a[A.RESULT_SUBTYPE]}, {a.get(A.RESULT_NUM_TURNS, '?')} turns")
        total = a.get(A.RESULT_TOTAL_COST_USD)
        spent = a.get(A.COST_RUN_USD, total)
        session = f", session {_usd(total)}" if spent != total else ""
        compaction = (f" compaction {_usd(a[A.COST_COMPACTION_USD])},"
                      if A.COST_COMPACTION_USD in a else "")
        parts.append(
            f"cost {_usd(spent)} (chats {_usd(a.get(A.COST_CHAT_SUM_USD))},{compaction}"
            f" diff {_usd(a.get(A.COST_DIFFERENCE_USD))}{session})"
        )
    if parts:
        text.append("  " + "  ".join(parts))
    if span.status.code == "error":
        description = span.status.description
        rule = a.get(A.POLICY_RULE_ID)
        if A.POLICY_DECISION in a and rule:
            description = description.replace(f" [{rule}]", "", 1)  # shown once, above
        text.append(f"  ERROR {description}", style="red")
    return text


def build_tree(spans: Sequence[SpanSpec]) -> Tree:
    ids = {s.span_id for s in spans}
    children: dict[int | None, list[SpanSpec]] = defaultdict(list)
    for span in spans:
        parent = span.parent_span_id if span.parent_span_id in ids else None
        children[parent].append(span)
    roots = sorted(children[None], key=lambda s: s.start_ns)
    title = roots[0].attributes.get(A.GEN_AI_CONVERSATION_ID, "") if roots else ""
    tree = Tree(Text(f"trace {spans[0].trace_id:032x}  session {title}", style="dim"))

    def add(node: Tree, span: SpanSpec) -> None:
        branch = node.add(span_label(span))
        for child in sorted(children[span.span_id], key=lambda s: (s.start_ns, s.name)):
            add(branch, child)

    for root in roots:
        add(tree, root)
    return tree


def trace_show(
    session: str | None, *, home: Path | None = None, console: Console | None = None
) -> int:
    """Print the trace; 0 when one was found, 1 otherwise (a one-line message on stderr)."""
    if home is None:
        from gateway.env import gateway_home

        home = gateway_home()
    out = console or Console()
    path = span_file_path(home)
    spans = select_trace(list(read_span_file(path)), session)
    if not spans:
        which = f"for session {session}" if session else "yet"
        print(f"no trace {which} in {path}", file=sys.stderr)
        return 1
    out.print(build_tree(spans))
    return 0
