"""Claude Code's message stream (and the gateway's hook events) -> finished span specs: pure.

Feed `TraceBuilder` the stream-json message dicts in order, each with the time it was seen,
plus the hook-side events; every call returns the spans that finished. `finish()` at the end
of the stream closes whatever is still open and returns the root span last. The spans
themselves are made by the one tree builder `serve` uses too (tree.py): a turn per response,
its chat and tools; a subagent under the Task/Agent call that started it; compactions from
status: compacting to compact_boundary.

A subagent's responses never reach the partial stream (Claude Code 2.1.332), so its chats know
only the placeholder usage of the `assistant` lines. Such a chat is held, with its turn and
tools, until `complete_from_transcripts` hands over the final usage its transcript recorded, or
until `finish`, which emits whatever is still held as it is (unpriced). A compaction span is
held likewise until the query's result, whose `model_usage_since_last_result` prices the
summary request the stream never shows (stream_compactions.py). With content capture, each
agent's conversation is rebuilt from the stream for its chats' input (conversation.py).
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
from gateway.telemetry.ids import TOOL_SPAN_KIND, IdSource, RandomIds, parse_traceparent
from gateway.telemetry.model import AttributeValue, SpanRef, SpanSpec
from gateway.telemetry.pricing import PriceTable, load_price_table
from gateway.telemetry.result import cost_attributes, result_attributes, result_status
from gateway.telemetry.stream_compactions import StreamCompactions
from gateway.telemetry.subagents import TRANSCRIPT_SOURCE, FinalUsage
from gateway.telemetry.tools import ToolCallState
from gateway.telemetry.tree import AGENT_NAME, INCOMPLETE_ERROR, TURN, Tree, task_prompt
from gateway.types import Decision

MAIN = ""
"""Context key of the main agent; a subagent's key is its parent_tool_use_id."""


@dataclass(slots=True)
class _Chat:
    acc: ChatAccumulator
    span_id: int
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
class _Turn:
    index: int
    context: str
    span_id: int
    parent_span_id: int
    chat: _Chat
    tool_ids: list[str] = field(default_factory=list)
    superseded: bool = False
    emitted: bool = False


@dataclass(slots=True)
class _Context:
    turns: int = 0
    current: _Turn | None = None
    conversation: Conversation = field(default_factory=Conversation)
    """The conversation so far (content capture only)."""


@dataclass(slots=True)
class _Agent:
    """A subagent: the invoke_agent span between its Task/Agent call and its turns."""

    tool_use_id: str
    span_id: int
    start_ns: int
    end_ns: int
    agent_id: str = ""
    agent_type: str = ""
    emitted: bool = False


class TraceBuilder:
    """A state machine from messages and hook events to span specs. No clocks, no I/O."""

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
        self._root_id = self._tree.root_id
        self._prompt = prompt
        self._start_ns = start_ns
        self._model = ""
        self._version = ""
        self._contexts: dict[str, _Context] = {}
        self._chats: dict[str, _Chat] = {}
        self._turn_of_chat: dict[str, _Turn] = {}
        self._tools: dict[str, ToolCallState] = {}
        self._tasks: dict[str, str] = {}
        self._subagent_types: dict[str, str] = {}
        self._results: list[Mapping[str, Any]] = []
        self._compactions = StreamCompactions(ids)
        self._final_usage: dict[str, FinalUsage] = {}
        self._agents: dict[str, _Agent] = {}
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
        return SpanRef(self._tree.trace_id, self._root_id, self._tree.trace_state)

    def tool_ref(self, tool_use_id: str) -> SpanRef:
        """Where a tool call's span is (or will be): its id is fixed at the first ask."""
        return SpanRef(self._tree.trace_id, self._ids.span_id(TOOL_SPAN_KIND, tool_use_id))

    def annotate_root(self, attrs: Mapping[str, AttributeValue]) -> None:
        """Attributes the caller knows about the whole run (e.g. the policy in force)."""
        self._root_extra.update(attrs)

    # --- inputs ----------------------------------------------------------------------------
    def feed(self, message: Mapping[str, Any], at_ns: int) -> list[SpanSpec]:
        """One stream-json message as `claude -p --output-format stream-json --verbose
        --include-partial-messages` prints it (or the SDK's equivalent dict)."""
        out: list[SpanSpec] = []
        if not self._tree.session_id and message.get("session_id"):
            self._tree.session_id = str(message["session_id"])
        kind = message.get("type")
        if kind == "system":
            self._system(message, at_ns, out)
        elif kind == "stream_event":
            self._stream_event(message, at_ns, out)
        elif kind == "assistant":
            self._assistant(message, at_ns, out)
        elif kind == "user":
            self._user(message, at_ns, out)
        elif kind == "result":
            self._result(message, at_ns, out)
        return out

    def on_pre_tool_use(
        self, tool_use_id: str, tool_name: str, decision: Decision | None, at_ns: int
    ) -> list[SpanSpec]:
        """PreToolUse seen by the gateway: the tool span starts here, with the decision."""
        tool = self._tool(tool_use_id, tool_name, at_ns)
        tool.name = tool_name or tool.name  # the name hooks and policies see (Agent, not Task)
        tool.start_ns = at_ns
        tool.decided_ns = at_ns
        tool.decision = decision
        return []

    def on_post_tool_use(self, tool_use_id: str, is_error: bool, at_ns: int) -> list[SpanSpec]:
        """PostToolUse / PostToolUseFailure: the tool's execution ended."""
        tool = self._tools.get(tool_use_id)
        if tool is None or tool.emitted:
            return []
        tool.end_ns = at_ns if tool.end_ns is None else min(tool.end_ns, at_ns)
        tool.is_error = is_error
        return []

    def on_compact_archived(
        self,
        archive_id: str | None,
        error: str | None,
        at_ns: int,
        *,
        trigger: str | None = None,
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
        out: list[SpanSpec] = []
        for message_id, chat in list(self._chats.items()):
            if chat.held and not chat.emitted and message_id in final_usage:
                self._emit_chat(chat, out, chat.end_ns)
        return out

    def finish(self, at_ns: int) -> list[SpanSpec]:
        """The stream ended: close everything still open (marked incomplete), root last."""
        if self._finished:
            return []
        self._finished = True
        out: list[SpanSpec] = []
        for chat in list(self._chats.values()):
            if not chat.emitted:
                ended = chat.acc.saw_start and not chat.held
                self._emit_chat(chat, out, at_ns if ended else chat.end_ns)
        for tool in list(self._tools.values()):
            if not tool.emitted:
                if tool.end_ns is None:
                    tool.end_ns = at_ns
                    tool.incomplete = True
                tool.task_open = False
                tool.result_seen = True
                self._emit_tool(tool, out)
        for ctx in self._contexts.values():
            if ctx.current is not None:
                ctx.current.superseded = True
                self._try_emit_turn(ctx.current, out)
        out += self._compactions.finish(self._tree, at_ns)
        out.append(self._root_spec(at_ns))
        return out

    # --- message kinds ---------------------------------------------------------------------
    def _system(self, msg: Mapping[str, Any], at_ns: int, out: list[SpanSpec]) -> None:
        subtype = msg.get("subtype")
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
            main = self._contexts.get(MAIN)
            if self._content.capture and main is not None:
                preserved = meta.get("preserved_messages") or {}
                main.conversation.compacted(
                    preserved.get("uuids") or (), str(preserved.get("anchor_uuid") or "")
                )
        elif subtype == "task_started" and msg.get("tool_use_id"):
            tool = self._tool(str(msg["tool_use_id"]), "", at_ns)
            tool.task_id = str(msg.get("task_id") or "")
            tool.task_open = True
            self._tasks[tool.task_id] = tool.tool_use_id
            agent = self._agent(tool.tool_use_id, at_ns)
            agent.agent_id = agent.agent_id or tool.task_id
            agent.agent_type = agent.agent_type or str(msg.get("subagent_type") or "")
        elif subtype in ("task_notification", "task_updated"):
            self._task_update(msg, at_ns, out)
            main = self._contexts.get(MAIN)
            if subtype == "task_notification" and self._content.capture and main is not None:
                main.conversation.notification(M.task_notification_text(msg))

    def _task_update(self, msg: Mapping[str, Any], at_ns: int, out: list[SpanSpec]) -> None:
        tool_use_id = msg.get("tool_use_id") or self._tasks.get(str(msg.get("task_id") or ""))
        tool = self._tools.get(str(tool_use_id or ""))
        status = msg.get("status") or (msg.get("patch") or {}).get("status")
        if tool is None or tool.emitted or not status:
            return
        tool.task_status = str(status)
        if status in ("completed", "failed", "killed", "stopped"):
            tool.task_open = False
            tool.end_ns = max(tool.end_ns or at_ns, at_ns)
            agent = self._agents.get(tool.tool_use_id)
            if agent is not None:
                agent.end_ns = max(agent.end_ns, at_ns)
            self._maybe_emit_tool(tool, out)

    def _stream_event(self, msg: Mapping[str, Any], at_ns: int, out: list[SpanSpec]) -> None:
        event = msg.get("event") or {}
        context = str(msg.get("parent_tool_use_id") or MAIN)
        if event.get("type") == "message_start":
            message_id = str((event.get("message") or {}).get("id") or msg.get("uuid") or at_ns)
            ttft = msg.get("ttft_ms")
            ttft_ms = float(ttft) if isinstance(ttft, int | float) else None
            start = at_ns - int(ttft_ms * 1e6) if ttft_ms is not None else at_ns
            chat: _Chat | None = self._chat(message_id, context, start, at_ns, out)
            if chat is not None:
                chat.ttft_ms = ttft_ms
        else:
            message_id = str(msg.get("api_message_id") or "")
            chat = self._chats.get(message_id) or self._current_chat(context)
        if chat is None:
            return
        chat.acc.apply(event)
        chat.end_ns = at_ns
        for block in chat.acc.tool_uses:
            self._attach_tool(block.id, block.name, chat, at_ns)
        if event.get("type") == "message_stop":
            self._emit_chat(chat, out, at_ns)

    def _assistant(self, msg: Mapping[str, Any], at_ns: int, out: list[SpanSpec]) -> None:
        message = msg.get("message") or {}
        context = str(msg.get("parent_tool_use_id") or MAIN)
        message_id = str(message.get("id") or msg.get("uuid") or at_ns)
        if context != MAIN and msg.get("subagent_type"):
            self._subagent_types[context] = str(msg["subagent_type"])
        self._note_agent(msg, context, at_ns)
        self._finalize_unstreamed(context, out, keep=message_id)
        chat = self._chats.get(message_id) or self._chat(message_id, context, at_ns, at_ns, out)
        chat.acc.apply_message(message)
        if msg.get("uuid"):
            chat.uuids.add(str(msg["uuid"]))
        if not chat.acc.saw_start:
            chat.end_ns = at_ns
        for block in message.get("content") or []:
            if block.get("type") == "tool_use":
                tool = self._attach_tool(str(block.get("id")), str(block.get("name")), chat, at_ns)
                tool.input = block.get("input")

    def _user(self, msg: Mapping[str, Any], at_ns: int, out: list[SpanSpec]) -> None:
        context = str(msg.get("parent_tool_use_id") or MAIN)
        self._note_agent(msg, context, at_ns)
        self._finalize_unstreamed(context, out)
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
            if tool is None or tool.emitted:
                continue
            tool.is_error = bool(block.get("is_error")) or bool(tool.is_error)
            tool.result = block.get("content")
            permission = (meta.get(tool_use_id) or {}).get("permission_decision") or {}
            tool.permission_decision = str(permission.get("decision") or "") or None
            tool.permission_source = str(permission.get("source") or "") or None
            tool.end_ns = at_ns if tool.end_ns is None else min(tool.end_ns, at_ns)
            tool.result_seen = True
            self._maybe_emit_tool(tool, out)

    def _result(self, msg: Mapping[str, Any], at_ns: int, out: list[SpanSpec]) -> None:
        self._results.append(msg)
        if isinstance(msg.get("result"), str):
            self._result_text = str(msg["result"])
        self._finalize_unstreamed(MAIN, out)
        window, self._window_chats = self._window_chats, []
        usage = self._compactions.unstreamed_usage(
            msg, ((c.acc.model or self._model, c.acc.usage, c.acc.exact) for c in window)
        )
        out += self._compactions.release(self._tree, usage)
        ctx = self._contexts.get(MAIN)
        if ctx is not None and ctx.current is not None:
            ctx.current.superseded = True
            self._try_emit_turn(ctx.current, out)
            ctx.current = None

    # --- state -----------------------------------------------------------------------------
    def _chat(
        self, message_id: str, context: str, start_ns: int, at_ns: int, out: list[SpanSpec]
    ) -> _Chat:
        """A new API response: it starts a new turn in its context."""
        existing = self._chats.get(message_id)
        if existing is not None:
            return existing
        ctx = self._contexts.get(context)
        if ctx is None:
            ctx = self._contexts[context] = _Context()
            for message in self._opening(context):
                ctx.conversation.add(message)
        if ctx.current is not None:
            ctx.current.superseded = True
            self._try_emit_turn(ctx.current, out)
        chat = _Chat(
            acc=ChatAccumulator(message_id=message_id),
            span_id=self._ids.span_id("chat", message_id),
            start_ns=start_ns,
            end_ns=at_ns,
        )
        if self._content.capture:
            chat.sent = ctx.conversation.sent_with(chat.acc, chat.uuids)
        ctx.turns += 1
        self._window_chats.append(chat)
        parent = self._root_id if context == MAIN else self._agent(context, start_ns).span_id
        turn = _Turn(
            index=ctx.turns,
            context=context,
            span_id=self._ids.span_id(TURN, message_id),
            parent_span_id=parent,
            chat=chat,
        )
        ctx.current = turn
        self._chats[message_id] = chat
        self._turn_of_chat[message_id] = turn
        return chat

    def _agent(self, context: str, at_ns: int) -> _Agent:
        """The subagent running under the Task/Agent call `context` (created on first sight)."""
        agent = self._agents.get(context)
        if agent is None:
            agent = self._agents[context] = _Agent(
                tool_use_id=context,
                span_id=self._ids.span_id("agent", context),
                start_ns=at_ns,
                end_ns=at_ns,
            )
        agent.start_ns = min(agent.start_ns, at_ns)
        agent.end_ns = max(agent.end_ns, at_ns)
        return agent

    def _note_agent(self, msg: Mapping[str, Any], context: str, at_ns: int) -> None:
        if context == MAIN:
            return
        agent = self._agent(context, at_ns)
        agent.agent_id = agent.agent_id or str(msg.get("agent_id") or "")
        agent.agent_type = agent.agent_type or str(msg.get("subagent_type") or "")

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
        return ctx.current.chat if ctx is not None and ctx.current is not None else None

    def _tool(self, tool_use_id: str, name: str, at_ns: int) -> ToolCallState:
        tool = self._tools.get(tool_use_id)
        if tool is None:
            tool = ToolCallState(
                tool_use_id=tool_use_id,
                name=name,
                span_id=self._ids.span_id(TOOL_SPAN_KIND, tool_use_id),
                start_ns=at_ns,
            )
            self._tools[tool_use_id] = tool
        tool.name = tool.name or name
        return tool

    def _attach_tool(self, tool_use_id: str, name: str, chat: _Chat, at_ns: int) -> ToolCallState:
        tool = self._tool(tool_use_id, name, at_ns)
        turn = self._turn_of_chat.get(chat.acc.message_id)
        if turn is not None and tool.turn_span_id is None:
            tool.turn_span_id = turn.span_id
            tool.parent_tool_use_id = turn.context or None
            tool.chat_message_id = chat.acc.message_id
            turn.tool_ids.append(tool_use_id)
        return tool

    def _finalize_unstreamed(self, context: str, out: list[SpanSpec], keep: str = "") -> None:
        """Without partial messages a chat ends at the next message of its context."""
        chat = self._current_chat(context)
        if (
            chat is not None
            and not chat.emitted
            and not chat.acc.saw_start
            and chat.acc.message_id != keep
        ):
            self._emit_chat(chat, out, chat.end_ns)

    # --- emitting --------------------------------------------------------------------------
    def _emit_chat(self, chat: _Chat, out: list[SpanSpec], end_ns: int) -> None:
        if chat.emitted:
            return
        chat.end_ns = end_ns
        turn = self._turn_of_chat[chat.acc.message_id]
        if not chat.acc.exact:
            final = self._final_usage.get(chat.acc.message_id)
            if final is not None:
                chat.acc.apply_final(final.usage, final.stop_reason, source=TRANSCRIPT_SOURCE)
            elif turn.context != MAIN and not self._finished:
                chat.held = True  # a subagent's final usage comes from its transcript
                return
        chat.held = False
        chat.emitted = True
        ttft = None if chat.ttft_ms is None else round(chat.ttft_ms * 1e6)
        model = self._model if turn.context == MAIN else ""
        spec, chat.cost = self._tree.chat(
            chat.acc, ChatRequestMeta(chat.start_ns, end_ns, model, None, None, ttft),
            span_id=chat.span_id, parent_span_id=turn.span_id,
            sent=ChatInput(messages=chat.sent) if chat.sent else None,
            extra={A.PARENT_TOOL_USE_ID: turn.context} if turn.context else None,
        )
        out.append(spec)
        for tool_use_id in turn.tool_ids:
            self._maybe_emit_tool(self._tools[tool_use_id], out)
        self._try_emit_turn(turn, out)

    def _maybe_emit_tool(self, tool: ToolCallState, out: list[SpanSpec]) -> None:
        chat = self._chats.get(tool.chat_message_id or "")
        if tool.result_seen and not tool.task_open and (chat is None or chat.emitted):
            self._emit_tool(tool, out)

    def _emit_tool(self, tool: ToolCallState, out: list[SpanSpec]) -> None:
        if tool.emitted:
            return
        tool.emitted = True
        turn = self._turn_of_chat.get(tool.chat_message_id or "")
        parent = tool.turn_span_id if tool.turn_span_id is not None else self._root_id
        out.append(self._tree.tool(
            tool, parent_span_id=parent, turn_cost=turn.chat.cost if turn else None,
            turn_tools=len(turn.tool_ids) if turn else 0,
        ))
        agent = self._agents.get(tool.tool_use_id)
        if agent is not None and not agent.emitted:  # the subagent, inside its Task/Agent call
            agent.emitted = True
            ctx = self._contexts.get(agent.tool_use_id)
            last = ctx.current.chat.acc if ctx is not None and ctx.current is not None else None
            start = max(agent.start_ns, tool.start_ns)
            out.append(self._tree.agent(
                span_id=agent.span_id, tool_span_id=tool.span_id, start_ns=start,
                end_ns=min(agent.end_ns, tool.end_ns or agent.end_ns),
                agent_type=agent.agent_type or self._subagent_types.get(agent.tool_use_id, ""),
                agent_id=agent.agent_id, tool_use_id=agent.tool_use_id, tool_input=tool.input,
                answer="\n".join(last.texts) if last is not None and last.texts else None,
                stop_reason=last.stop_reason if last is not None else None,
            ))
        if turn is not None:
            self._try_emit_turn(turn, out)

    def _try_emit_turn(self, turn: _Turn, out: list[SpanSpec]) -> None:
        if turn.emitted or not turn.superseded or not turn.chat.emitted:
            return
        tools = [self._tools[t] for t in turn.tool_ids]
        if not all(t.emitted for t in tools):
            return
        turn.emitted = True
        out.append(self._tree.turn(
            message_id=turn.chat.acc.message_id, parent_span_id=turn.parent_span_id,
            start_ns=turn.chat.start_ns,
            end_ns=max([turn.chat.end_ns, *(t.end_ns or 0 for t in tools)]),
            index=turn.index, tool_calls=len(tools),
            agent_name=self._subagent_types.get(turn.context, self._tree.agent_name),
            cost=turn.chat.cost, parent_tool_use_id=turn.context,
        ))

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

