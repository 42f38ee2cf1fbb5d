"""Claude Code's message stream (and `run`'s hook events) -> the facts of the run's trace: pure.

Feed `TraceBuilder` the stream-json message dicts in order, each with the time it was seen,
plus the hook-side events; every call returns the spans that finished. `finish()` at the end
of the stream closes whatever is still open and returns the root span last.

The stream is read here into the facts `serve` learns from hook events and proxied exchanges:
a response ended, a tool was asked for, decided, ended with the result the model read, a
subagent started and stopped. The fact layer both feed (facts.py, over an in-process store)
makes the turns, tools and subagents; this module makes what only the stream tells: the chats
(their conversation rebuilt from the stream, conversation.py), the compactions and the root.

A subagent's responses never reach the partial stream (Claude Code 2.1.332), so its chats know
only the placeholder usage of the `assistant` lines. Such a chat is held, and with it its turn
and tools, until `complete_from_transcripts` hands over the final usage its transcript
recorded, or until `finish`, which emits whatever is still held as it is (unpriced). A
compaction span is held likewise until the query's result, whose
`model_usage_since_last_result` prices the summary request the stream never shows
(stream_compactions.py).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.telemetry import attributes as A
from gateway.telemetry import messages as M
from gateway.telemetry.chat import ChatAccumulator, ChatInput, ChatRequestMeta
from gateway.telemetry.content import ContentPolicy
from gateway.telemetry.conversation import Conversation
from gateway.telemetry.fact_state import MemoryTraceState
from gateway.telemetry.facts import TraceFacts
from gateway.telemetry.ids import TOOL_SPAN_KIND, IdSource, RandomIds, parse_traceparent
from gateway.telemetry.model import AttributeValue, SpanRef, SpanSpec
from gateway.telemetry.pricing import PriceTable, load_price_table
from gateway.telemetry.result import cost_attributes, result_attributes, result_status
from gateway.telemetry.stream_compactions import StreamCompactions
from gateway.telemetry.subagents import TRANSCRIPT_SOURCE, FinalUsage
from gateway.telemetry.tree import AGENT_NAME, INCOMPLETE_ERROR, TURN, Tree, task_prompt
from gateway.types import Decision

MAIN = ""
"""Context key of the main agent; a subagent's key is its parent_tool_use_id."""
RUN = "run"
"""The one session of the run's fact store."""
TASK_ENDED = ("completed", "failed", "killed", "stopped")


@dataclass(slots=True)
class _Chat:
    acc: ChatAccumulator
    context: str
    start_ns: int
    end_ns: int
    ttft_ms: float | None = None
    cost: float | None = None
    held: bool = False
    emitted: bool = False
    sent: tuple[M.Message, ...] = ()
    """The conversation before this response (content capture only)."""
    uuids: set[str] = field(default_factory=set)
    """The stream's uuids of its `assistant` lines (a compaction keeps messages by uuid)."""


@dataclass(slots=True)
class _Context:
    current: _Chat | None = None
    conversation: Conversation = field(default_factory=Conversation)
    """The conversation so far (content capture only)."""


@dataclass(slots=True)
class _Tool:
    """What the stream and the hooks told of a tool call until the fact layer is told it
    ended: a background Task/Agent call ends when its task does, not at its tool_result."""

    name: str
    input: Any = None
    end_ns: int | None = None
    is_error: bool | None = None
    result_seen: bool = False
    task_open: bool = False
    ended: bool = False
    facts: dict[str, str] = field(default_factory=dict)
    """Permission decision and source, task id and status (facts.TOOL_END_FACTS)."""


class TraceBuilder:
    """The stream and hook events read into facts. No clocks, no I/O."""

    def __init__(
        self,
        *,
        ids: IdSource,
        start_ns: int,
        parent: SpanRef | None = None,
        prices: PriceTable | None = None,
        content: ContentPolicy | None = None,
        agent_name: str = AGENT_NAME,
        prompt: str | None = None,
        session_id: str = "",
    ) -> None:
        self._ids = ids
        self._content = content or ContentPolicy()
        self._tree = Tree(
            ids, prices=prices if prices is not None else load_price_table(),
            content=self._content, session_id=session_id, parent=parent, agent_name=agent_name,
        )
        self._out: list[SpanSpec] = []
        self._facts = TraceFacts(
            MemoryTraceState(), self._content, tree=lambda _: self._tree, export=self._out.append
        )
        self._prompt = prompt
        self._start_ns = start_ns
        self._model = ""
        self._version = ""
        self._contexts: dict[str, _Context] = {}
        self._chats: dict[str, _Chat] = {}
        self._tools: dict[str, _Tool] = {}
        self._tasks: dict[str, str] = {}
        """task_id -> the Task/Agent call's tool_use_id."""
        self._agents: dict[str, str] = {}
        """A subagent's context (its Task/Agent call's tool_use_id) -> its agent id."""
        self._results: list[Mapping[str, Any]] = []
        self._compactions = StreamCompactions(ids)
        self._final_usage: dict[str, FinalUsage] = {}
        self._tool_names: tuple[str, ...] = ()
        self._result_text: str | None = None
        self._root_extra: dict[str, AttributeValue] = {}
        self._window_chats: list[_Chat] = []
        """Chats since the last result: what its model_usage_since_last_result also counts."""
        self._finished = False

    @classmethod
    def for_wrapper(
        cls,
        *,
        start_ns: int,
        traceparent: str | None = None,
        tracestate: str | None = None,
        rng: random.Random | None = None,
        **options: Any,
    ) -> TraceBuilder:
        """The `agent-gateway run` builder: a child of TRACEPARENT when valid, else a new trace."""
        parent = parse_traceparent(traceparent, tracestate)
        ids = RandomIds(parent.trace_id if parent is not None else None, rng=rng)
        return cls(ids=ids, start_ns=start_ns, parent=parent, **options)

    @property
    def session_id(self) -> str:
        return self._tree.session_id

    @property
    def root(self) -> SpanRef:
        """The root span's place, known from the start: pass it on with `traceparent_for`."""
        return SpanRef(self._tree.trace_id, self._tree.root_id, self._tree.trace_state)

    def tool_ref(self, tool_use_id: str) -> SpanRef:
        """Where a tool call's span is (or will be): its id is fixed at the first ask."""
        return SpanRef(self._tree.trace_id, self._ids.span_id(TOOL_SPAN_KIND, tool_use_id))

    def annotate_root(self, attrs: Mapping[str, AttributeValue]) -> None:
        """Attributes the caller knows about the whole run (e.g. the policy in force)."""
        self._root_extra.update(attrs)

    def _finished_spans(self) -> list[SpanSpec]:
        out, self._out[:] = list(self._out), []
        return out

    # --- inputs ----------------------------------------------------------------------------
    def feed(self, message: Mapping[str, Any], at_ns: int) -> list[SpanSpec]:
        """One stream-json message as `claude -p --output-format stream-json --verbose
        --include-partial-messages` prints it (or the SDK's equivalent dict)."""
        if not self._tree.session_id and message.get("session_id"):
            self._tree.session_id = str(message["session_id"])
        handler = {
            "system": self._system, "stream_event": self._stream_event,
            "assistant": self._assistant, "user": self._user, "result": self._result,
        }.get(str(message.get("type")))
        if handler is not None:
            handler(message, at_ns)
        return self._finished_spans()

    def on_pre_tool_use(
        self, tool_use_id: str, tool_name: str, decision: Decision | None, at_ns: int
    ) -> list[SpanSpec]:
        """PreToolUse seen by the gateway: the tool span starts here, with the decision."""
        tool = self._tool(tool_use_id, tool_name, at_ns)
        tool.name = tool_name or tool.name  # the name hooks and policies see (Agent, not Task)
        self._facts.tool_decided(RUN, tool_use_id, decision, at_ns)
        return []

    def on_post_tool_use(self, tool_use_id: str, is_error: bool, at_ns: int) -> list[SpanSpec]:
        """PostToolUse / PostToolUseFailure: the tool's execution ended."""
        tool = self._tools.get(tool_use_id)
        if tool is not None and not tool.ended:
            tool.end_ns = at_ns if tool.end_ns is None else min(tool.end_ns, at_ns)
            tool.is_error = is_error
        return []

    def on_compact_archived(
        self, archive_id: str | None, error: str | None, at_ns: int, *, trigger: str | None = None
    ) -> list[SpanSpec]:
        """PreCompact handled: the transcript's archive id, or why archiving failed."""
        del at_ns  # the compaction span's times come from the stream
        self._compactions.archived(archive_id, error, trigger)
        return []

    def complete_from_transcripts(self, final_usage: Mapping[str, FinalUsage]) -> list[SpanSpec]:
        """Final usage and stop_reason per message.id, read from subagent transcripts (see
        `gateway.telemetry.subagents`): the held subagent chats they complete are priced like
        streamed ones and emitted, with their tools and turns when those are done too."""
        if self._finished:
            return []
        self._final_usage.update(final_usage)
        for message_id, chat in list(self._chats.items()):
            if chat.held and not chat.emitted and message_id in final_usage:
                self._emit_chat(chat, chat.end_ns)
        return self._finished_spans()

    def finish(self, at_ns: int) -> list[SpanSpec]:
        """The stream ended: close everything still open (marked incomplete), root last."""
        if self._finished:
            return []
        self._finished = True
        for chat in list(self._chats.values()):
            if not chat.emitted:
                ended = chat.acc.saw_start and not chat.held
                self._emit_chat(chat, at_ns if ended else chat.end_ns)
        for tool_use_id, tool in self._tools.items():
            if not tool.ended:
                incomplete = tool.end_ns is None
                tool.task_open, tool.result_seen = False, True
                tool.end_ns = at_ns if incomplete else tool.end_ns
                self._end_tool(tool_use_id, tool, incomplete=incomplete)
        self._facts.close_leftovers(RUN, at_ns)
        self._out += self._compactions.finish(self._tree, at_ns)
        self._out.append(self._root_spec(at_ns))
        return self._finished_spans()

    # --- message kinds ---------------------------------------------------------------------
    def _system(self, msg: Mapping[str, Any], at_ns: int) -> None:
        subtype = msg.get("subtype")
        main = self._contexts.get(MAIN)
        if subtype == "init":
            self._model = self._model or str(msg.get("model") or "")
            self._version = self._version or str(msg.get("claude_code_version") or "")
            tools = msg.get("tools")
            if not self._tool_names and isinstance(tools, list):
                self._tool_names = tuple(str(t) for t in tools)
        elif subtype == "status":
            self._compactions.status(msg, at_ns)
        elif subtype == "compact_boundary":
            meta = msg.get("compact_metadata") or {}
            self._compactions.boundary(meta, at_ns)
            if self._content.capture and main is not None:
                preserved = meta.get("preserved_messages") or {}
                main.conversation.compacted(
                    preserved.get("uuids") or (), str(preserved.get("anchor_uuid") or "")
                )
        elif subtype == "task_started" and msg.get("tool_use_id"):
            tool_use_id = str(msg["tool_use_id"])
            tool = self._tool(tool_use_id, "", at_ns)
            task_id = str(msg.get("task_id") or "")
            tool.facts["task_id"] = task_id
            tool.task_open = True
            self._tasks[task_id] = tool_use_id
            self._agents.setdefault(tool_use_id, task_id or tool_use_id)
            self._note_agent(tool_use_id, str(msg.get("subagent_type") or ""), at_ns)
        elif subtype in ("task_notification", "task_updated"):
            self._task_update(msg, at_ns)
            if subtype == "task_notification" and self._content.capture and main is not None:
                main.conversation.notification(M.task_notification_text(msg))

    def _task_update(self, msg: Mapping[str, Any], at_ns: int) -> None:
        tool_use_id = str(
            msg.get("tool_use_id") or self._tasks.get(str(msg.get("task_id") or "")) or ""
        )
        tool = self._tools.get(tool_use_id)
        status = msg.get("status") or (msg.get("patch") or {}).get("status")
        if tool is None or tool.ended or not status:
            return
        tool.facts["task_status"] = str(status)
        if status in TASK_ENDED:
            tool.task_open = False
            tool.end_ns = max(tool.end_ns or at_ns, at_ns)
            if tool_use_id in self._agents:
                self._facts.agent_stopped(RUN, self._agents[tool_use_id], at_ns)
            self._maybe_end_tool(tool_use_id, tool)

    def _stream_event(self, msg: Mapping[str, Any], at_ns: int) -> None:
        event = msg.get("event") or {}
        context = str(msg.get("parent_tool_use_id") or MAIN)
        chat: _Chat | None
        if event.get("type") == "message_start":
            message_id = str((event.get("message") or {}).get("id") or msg.get("uuid") or at_ns)
            ttft = msg.get("ttft_ms")
            ttft_ms = float(ttft) if isinstance(ttft, int | float) else None
            start = at_ns - int(ttft_ms * 1e6) if ttft_ms is not None else at_ns
            chat = self._chat(message_id, context, start, at_ns)
            chat.ttft_ms = ttft_ms
        else:
            message_id = str(msg.get("api_message_id") or "")
            chat = self._chats.get(message_id) or self._current_chat(context)
        if chat is None:
            return
        chat.acc.apply(event)
        chat.end_ns = at_ns
        for block in chat.acc.tool_uses:
            self._tool(block.id, block.name, at_ns, context)
        if event.get("type") == "message_stop":
            self._emit_chat(chat, at_ns)

    def _assistant(self, msg: Mapping[str, Any], at_ns: int) -> None:
        message = msg.get("message") or {}
        context = str(msg.get("parent_tool_use_id") or MAIN)
        message_id = str(message.get("id") or msg.get("uuid") or at_ns)
        self._note_subagent(msg, context, at_ns)
        self._finalize_unstreamed(context, keep=message_id)
        chat = self._chats.get(message_id) or self._chat(message_id, context, at_ns, at_ns)
        chat.acc.apply_message(message)
        if msg.get("uuid"):
            chat.uuids.add(str(msg["uuid"]))
        if not chat.acc.saw_start:
            chat.end_ns = at_ns
        if context != MAIN:  # known now, though its chat may wait for its transcript
            self._facts.agent_answered(RUN, self._agents[context], chat.acc)
        for block in message.get("content") or []:
            if block.get("type") == "tool_use":
                tool_use_id = str(block.get("id"))
                tool = self._tool(tool_use_id, str(block.get("name")), at_ns, context)
                tool.input = block.get("input")
                self._facts.tool_started(
                    RUN, tool_use_id, name=tool.name, agent_id=self._agents.get(context, ""),
                    tool_input=tool.input, at_ns=at_ns,
                )

    def _user(self, msg: Mapping[str, Any], at_ns: int) -> None:
        context = str(msg.get("parent_tool_use_id") or MAIN)
        self._note_subagent(msg, context, at_ns)
        self._finalize_unstreamed(context)
        content = (msg.get("message") or {}).get("content")
        ctx = self._contexts.get(context)
        if self._content.capture and not msg.get("isReplay") and ctx is not None:
            ctx.conversation.user(str(msg.get("uuid") or ""), content)
        if not isinstance(content, list):
            return
        meta = {str(m.get("id")): m for m in msg.get("tool_result_meta") or [] if "id" in m}
        for block in content:
            if not isinstance(block, Mapping) or block.get("type") != "tool_result":
                continue
            tool_use_id = str(block.get("tool_use_id") or "")
            tool = self._tools.get(tool_use_id)
            if tool is None or tool.ended:
                continue
            tool.is_error = bool(block.get("is_error")) or bool(tool.is_error)
            self._facts.result_known(RUN, tool_use_id, block.get("content"))
            permission = (meta.get(tool_use_id) or {}).get("permission_decision") or {}
            for name, value in (("permission_decision", permission.get("decision")),
                                ("permission_source", permission.get("source"))):
                if value:
                    tool.facts[name] = str(value)
            tool.end_ns = at_ns if tool.end_ns is None else min(tool.end_ns, at_ns)
            tool.result_seen = True
            self._maybe_end_tool(tool_use_id, tool)

    def _result(self, msg: Mapping[str, Any], at_ns: int) -> None:
        self._results.append(msg)
        if isinstance(msg.get("result"), str):
            self._result_text = str(msg["result"])
        self._finalize_unstreamed(MAIN)
        window, self._window_chats = self._window_chats, []
        usage = self._compactions.unstreamed_usage(
            msg, ((c.acc.model or self._model, c.acc.usage, c.acc.exact) for c in window)
        )
        self._out += self._compactions.release(self._tree, usage)
        ctx = self._contexts.get(MAIN)
        if ctx is not None:
            ctx.current = None

    # --- state -----------------------------------------------------------------------------
    def _chat(self, message_id: str, context: str, start_ns: int, at_ns: int) -> _Chat:
        """A new API response: it starts a new turn in its context."""
        existing = self._chats.get(message_id)
        if existing is not None:
            return existing
        ctx = self._contexts.get(context)
        if ctx is None:
            ctx = self._contexts[context] = _Context()
            for message in self._opening(context):
                ctx.conversation.add(message)
        chat = _Chat(ChatAccumulator(message_id=message_id), context, start_ns, at_ns)
        if self._content.capture:
            chat.sent = ctx.conversation.sent_with(chat.acc, chat.uuids)
        ctx.current = chat
        self._window_chats.append(chat)
        self._chats[message_id] = chat
        return chat

    def _note_subagent(self, msg: Mapping[str, Any], context: str, at_ns: int) -> None:
        """A subagent's message: its agent id, type and the Task/Agent call that started it."""
        if context == MAIN:
            return
        self._agents.setdefault(context, str(msg.get("agent_id") or "") or context)
        self._note_agent(context, str(msg.get("subagent_type") or ""), at_ns)

    def _note_agent(self, context: str, agent_type: str, at_ns: int) -> None:
        agent_id = self._agents[context]
        self._facts.agent_started(RUN, agent_id, agent_type, at_ns)
        self._facts.agent_stopped(RUN, agent_id, at_ns)  # seen running until now
        self._facts.agent_called_by(RUN, agent_id, context)

    def _opening(self, context: str) -> list[M.Message]:
        """The first message of a context's conversation: the prompt, or the Task's prompt."""
        if not self._content.capture:
            return []
        if context == MAIN:
            return [M.user_text(self._prompt)] if self._prompt else []
        task = self._tools.get(context)
        prompt = task_prompt(task.input) if task is not None else None
        return [M.user_text(prompt)] if prompt else []

    def _current_chat(self, context: str) -> _Chat | None:
        ctx = self._contexts.get(context)
        return ctx.current if ctx is not None else None

    def _tool(self, tool_use_id: str, name: str, at_ns: int, context: str = MAIN) -> _Tool:
        """A tool call, known from its first sight (the response asking for it)."""
        tool = self._tools.get(tool_use_id)
        if tool is None:
            tool = self._tools[tool_use_id] = _Tool(name)
            self._facts.tool_started(RUN, tool_use_id, name=name,
                                     agent_id=self._agents.get(context, ""), tool_input=None,
                                     at_ns=at_ns)
        tool.name = tool.name or name
        return tool

    def _maybe_end_tool(self, tool_use_id: str, tool: _Tool) -> None:
        if tool.result_seen and not tool.task_open and not tool.ended:
            self._end_tool(tool_use_id, tool)

    def _end_tool(self, tool_use_id: str, tool: _Tool, *, incomplete: bool = False) -> None:
        tool.ended = True
        body = {"tool_use_id": tool_use_id, "tool_name": tool.name, **tool.facts}
        self._facts.end_tool(RUN, body, None, failed=tool.is_error,
                             end_ns=tool.end_ns or 0, last=self._finished, incomplete=incomplete)

    def _finalize_unstreamed(self, context: str, keep: str = "") -> None:
        """Without partial messages a chat ends at the next message of its context."""
        chat = self._current_chat(context)
        if (
            chat is not None
            and not chat.emitted
            and not chat.acc.saw_start
            and chat.acc.message_id != keep
        ):
            self._emit_chat(chat, chat.end_ns)

    # --- emitting --------------------------------------------------------------------------
    def _emit_chat(self, chat: _Chat, end_ns: int) -> None:
        """The chat's span, then the fact that its response ended (its turn and tools follow)."""
        if chat.emitted:
            return
        chat.end_ns = end_ns
        if not chat.acc.exact:
            final = self._final_usage.get(chat.acc.message_id)
            if final is not None:
                chat.acc.apply_final(final.usage, final.stop_reason, source=TRANSCRIPT_SOURCE)
            elif chat.context != MAIN and not self._finished:
                chat.held = True  # a subagent's final usage comes from its transcript
                return
        chat.held = False
        chat.emitted = True
        ttft = None if chat.ttft_ms is None else round(chat.ttft_ms * 1e6)
        model = self._model if chat.context == MAIN else ""
        meta = ChatRequestMeta(chat.start_ns, end_ns, model, None, None, ttft)
        agent_id = self._agents.get(chat.context, "")
        extra: dict[str, AttributeValue] = {}
        if chat.context:
            extra = {A.PARENT_TOOL_USE_ID: chat.context, A.AGENT_ID: agent_id}
        message_id = chat.acc.message_id
        spec, chat.cost = self._tree.chat(
            chat.acc, meta, span_id=self._ids.span_id("chat", message_id),
            parent_span_id=self._ids.span_id(TURN, message_id),
            sent=ChatInput(messages=chat.sent) if chat.sent else None, extra=extra,
        )
        self._out.append(spec)
        self._facts.response_ended(RUN, agent_id, model, chat.acc, meta, chat.cost)

    def _root_spec(self, at_ns: int) -> SpanSpec:
        attrs: dict[str, AttributeValue] = {}
        if self._version:
            attrs[A.CLAUDE_CODE_VERSION] = self._version
        attrs.update(self._root_extra)
        attrs.update(result_attributes(self._results))
        attrs.update(cost_attributes(
            [c.cost for c in self._chats.values()] + self._compactions.chat_costs,
            self._compactions.costs, self._results,
        ))
        if not self._results:
            attrs[A.INCOMPLETE] = True
            attrs[A.ERROR_TYPE] = INCOMPLETE_ERROR
        last = self._results[-1] if self._results else {}
        return self._tree.root(
            start_ns=self._start_ns, end_ns=max(self._start_ns, at_ns), model=self._model,
            prompt=self._prompt, answer=self._result_text,
            stop_reason=str(last.get("stop_reason") or "") or None,
            status=result_status(self._results), attrs=attrs, tools=self._tool_names,
        )
