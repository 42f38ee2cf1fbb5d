"""The trace tree, one builder for either vantage point: pure.

    invoke_agent claude-code          root
      turn                            one model response + the tools it asked for
        chat {model}                  the response
        execute_tool {tool}           PreToolUse -> its result
          invoke_agent {type}         a subagent; its turns under it
      compaction                      its own chat inside

`run` learns the facts from Claude Code's stream (spans.py), `serve` from hook events and
proxied exchanges (server/tracing.py). Both hand them to one fact layer (facts.py), kept in
memory or in a store `serve`'s replicas share, and it and they hand them to a `Tree`, which
alone names, parents, attributes and gives a status to every span, so both read the same in
any backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from gateway.telemetry import attributes as A
from gateway.telemetry import messages as M
from gateway.telemetry.chat import ChatAccumulator, ChatInput, ChatRequestMeta, chat_span
from gateway.telemetry.compaction import Compaction
from gateway.telemetry.content import ContentPolicy
from gateway.telemetry.ids import ROOT_SPAN, IdSource
from gateway.telemetry.model import AttributeValue, SpanEvent, SpanRef, SpanSpec, SpanStatus
from gateway.telemetry.pricing import PriceTable, Usage
from gateway.telemetry.tools import ToolCallState, tool_attributes, tool_events, tool_status

AGENT_NAME = "claude-code"
TURN = "turn"
INCOMPLETE_ERROR = "incomplete"
"""error.type of a root whose session ended before it finished."""
COMPACTION_USAGE_SOURCE = "result"
"""The usage source of a compaction's chat known only from the result's model usage."""
UNSET = SpanStatus()


class Tree:
    """One trace's spans. `session_id` may be learnt after the start (run's stream)."""

    def __init__(
        self, ids: IdSource, *, prices: PriceTable, content: ContentPolicy, session_id: str = "",
        parent: SpanRef | None = None, agent_name: str = AGENT_NAME,
    ) -> None:
        self.ids = ids
        self.prices = prices
        self.content = content
        self.session_id = session_id
        self.parent = parent
        self.agent_name = agent_name
        self.trace_id = parent.trace_id if parent is not None else ids.trace_id
        self.trace_state = parent.trace_state if parent is not None else ""
        self.root_id = ids.span_id(*ROOT_SPAN)

    def span(
        self, name: str, span_id: int, parent_span_id: int | None, start_ns: int, end_ns: int,
        attrs: Mapping[str, AttributeValue], status: SpanStatus = UNSET, *,
        events: Sequence[SpanEvent] = (),
    ) -> SpanSpec:
        base = {A.GEN_AI_CONVERSATION_ID: self.session_id} if self.session_id else {}
        return SpanSpec(
            name=name,
            trace_id=self.trace_id,
            span_id=span_id,
            parent_span_id=parent_span_id,
            start_ns=start_ns,
            end_ns=max(start_ns, end_ns),
            attributes={**base, **attrs},
            status=status,
            kind="internal",
            events=tuple(events),
            trace_state=self.trace_state,
        )

    # --- the spans ---------------------------------------------------------------------------
    def chat(
        self, acc: ChatAccumulator, meta: ChatRequestMeta, *, span_id: int, parent_span_id: int,
        sent: ChatInput | None = None, extra: Mapping[str, AttributeValue] | None = None,
        content: ContentPolicy | None = None,
    ) -> tuple[SpanSpec, float | None]:
        """A model response and its cost (None when unknown)."""
        spec = chat_span(
            acc,
            replace(meta, conversation_id=self.session_id),
            parent=SpanRef(self.trace_id, parent_span_id, self.trace_state),
            span_id=span_id,
            prices=self.prices,
            content=content or self.content,
            sent=sent,
        )
        if extra:
            spec = replace(spec, attributes={**spec.attributes, **extra})
        cost = spec.attributes.get(A.GEN_AI_USAGE_COST)
        return spec, float(cost) if isinstance(cost, int | float) else None

    def tool(
        self, tool: ToolCallState, *, parent_span_id: int, turn_cost: float | None = None,
        turn_tools: int = 0, extra: Mapping[str, AttributeValue] | None = None,
    ) -> SpanSpec:
        """A tool call: its decision, arguments, result as the model read it, and its share of
        its turn's cost."""
        split = turn_cost / turn_tools if turn_cost is not None and turn_tools else None
        attrs = tool_attributes(tool, split_cost=split, content=self.content)
        attrs.update(extra or {})
        end = tool.end_ns if tool.end_ns is not None else tool.start_ns
        return self.span(
            f"execute_tool {tool.name}" if tool.name else "execute_tool", tool.span_id,
            parent_span_id, tool.start_ns, end, attrs, tool_status(tool), events=tool_events(tool),
        )

    def agent(
        self, *, span_id: int, tool_span_id: int, start_ns: int, end_ns: int, agent_type: str,
        agent_id: str, tool_use_id: str, tool_input: Any, answer: str | None,
        stop_reason: str | None,
    ) -> SpanSpec:
        """A subagent, inside the Task/Agent call that started it: its prompt in, its last
        answer out."""
        attrs: dict[str, AttributeValue] = {
            A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT,
            A.GEN_AI_PROVIDER_NAME: A.PROVIDER_ANTHROPIC,
        }
        for name, value in ((A.PARENT_TOOL_USE_ID, tool_use_id), (A.GEN_AI_AGENT_NAME, agent_type),
                            (A.GEN_AI_AGENT_ID, agent_id)):
            if value:
                attrs[name] = value
        attrs.update(self.messages(task_prompt(tool_input), answer, stop_reason))
        name = f"{A.OP_INVOKE_AGENT} {agent_type}" if agent_type else A.OP_INVOKE_AGENT
        return self.span(name, span_id, tool_span_id, start_ns, max(start_ns, end_ns), attrs)

    def turn(
        self, *, message_id: str, parent_span_id: int, start_ns: int, end_ns: int, index: int,
        tool_calls: int, agent_name: str, cost: float | None, parent_tool_use_id: str,
        extra: Mapping[str, AttributeValue] | None = None,
    ) -> SpanSpec:
        """One response of an agent's loop and the tools it asked for."""
        attrs: dict[str, AttributeValue] = {
            A.TURN_INDEX: index,
            A.TURN_TOOL_CALLS: tool_calls,
            A.GEN_AI_AGENT_NAME: agent_name,
        }
        if cost is not None:
            attrs[A.TURN_COST_USD] = cost
        if parent_tool_use_id:
            attrs[A.PARENT_TOOL_USE_ID] = parent_tool_use_id
        attrs.update(extra or {})
        span_id = self.ids.span_id(TURN, message_id)
        return self.span(TURN, span_id, parent_span_id, start_ns, end_ns, attrs)

    def compaction(self, comp: Compaction) -> SpanSpec:
        """A context compaction: trigger, tokens, the transcript's archive; an error when it
        failed or the transcript was not archived first."""
        attrs: dict[str, AttributeValue] = {}
        for name, value in (
            (A.COMPACTION_PRE_TOKENS, comp.pre_tokens),
            (A.COMPACTION_POST_TOKENS, comp.post_tokens),
            (A.COMPACTION_DURATION_MS, comp.duration_ms),
            (A.COMPACTION_COST_USD, comp.cost_usd),
        ):
            if isinstance(value, int | float) and not isinstance(value, bool):
                attrs[name] = value
        for name, text in (
            (A.COMPACTION_TRIGGER, comp.trigger),
            (A.COMPACTION_RESULT, comp.result),
            (A.COMPACTION_ERROR, comp.error),
            (A.COMPACTION_ARCHIVE_ID, comp.archive_id),
            (A.COMPACTION_ARCHIVE_ERROR, comp.archive_error),
        ):
            if text:
                attrs[name] = text
        if comp.incomplete:
            attrs[A.INCOMPLETE] = True
        status = UNSET
        if comp.result not in (None, "success") or comp.error:
            status = SpanStatus("error", comp.error or str(comp.result))
        elif comp.archive_error:  # compacted, but the transcript was not archived first
            status = SpanStatus("error", f"archive failed: {comp.archive_error}")
        end = comp.end_ns or comp.start_ns
        return self.span(
            "compaction", comp.span_id, self.root_id, comp.start_ns, end, attrs, status
        )

    def compaction_chat(
        self, comp: Compaction, model: str, usage: Usage
    ) -> tuple[SpanSpec, float | None]:
        """The summary request of a compaction known only by its tokens, priced like any chat."""
        acc = ChatAccumulator(model=model)
        acc.apply_final(usage, None, source=COMPACTION_USAGE_SOURCE)
        meta = ChatRequestMeta(
            comp.start_ns, comp.end_ns or comp.start_ns, model, http_status=None, retry_count=None
        )
        span_id = self.ids.span_id("chat", f"compaction:{comp.span_id}")
        # its messages are not known, only its tokens
        return self.chat(acc, meta, span_id=span_id, parent_span_id=comp.span_id,
                         content=ContentPolicy())

    def root(
        self, *, start_ns: int, end_ns: int, model: str, prompt: str | None, answer: str | None,
        stop_reason: str | None, status: SpanStatus, attrs: Mapping[str, AttributeValue],
        tools: Sequence[str] = (),
    ) -> SpanSpec:
        """The session: the user's first prompt in, the final answer out; `attrs` are what the
        vantage point knows of its end (result, costs, error.type)."""
        root: dict[str, AttributeValue] = {
            A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT,
            A.GEN_AI_PROVIDER_NAME: A.PROVIDER_ANTHROPIC,
            A.GEN_AI_AGENT_NAME: self.agent_name,
        }
        if model:
            root[A.SESSION_MODEL] = model
            root[A.GEN_AI_REQUEST_MODEL] = model
        definitions = [{"type": "function", "name": n} for n in tools]
        root.update(self.messages(prompt, answer, stop_reason, definitions))
        root.update(attrs)
        spec = self.span(
            f"{A.OP_INVOKE_AGENT} {self.agent_name}", self.root_id,
            self.parent.span_id if self.parent is not None else None, start_ns, end_ns, root,
            status,
        )
        return replace(spec, parent_is_remote=self.parent is not None and self.parent.is_remote)

    def messages(
        self, prompt: str | None, answer: str | None, stop_reason: str | None,
        tools: list[dict[str, Any]] | None = None,
    ) -> dict[str, AttributeValue]:
        """An invoke_agent span's messages in the conventions' shape (content capture only)."""
        if not self.content.capture:
            return {}
        attrs: dict[str, AttributeValue] = {}
        output = [] if answer is None else [
            M.output_message([M.text_part(answer)], M.finish_reason(stop_reason))
        ]
        for name, items in (
            (A.GEN_AI_INPUT_MESSAGES, [M.user_text(prompt)] if prompt is not None else []),
            (A.GEN_AI_OUTPUT_MESSAGES, output),
            (A.GEN_AI_TOOL_DEFINITIONS, tools or []),
        ):
            rendered = self.content.render_list(items) if items else None
            if rendered is not None:
                attrs[name] = rendered
        return attrs


def task_prompt(tool_input: Any) -> str | None:
    """The prompt a Task/Agent call gives its subagent."""
    prompt = tool_input.get("prompt") if isinstance(tool_input, Mapping) else None
    return str(prompt) if prompt else None
