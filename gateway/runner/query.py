"""Runs the real agent loop through claude-agent-sdk with the gateway attached."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, Message, StreamEvent, Transport
from claude_agent_sdk import query as sdk_query

from gateway.env import policy_paths_from_env
from gateway.runner.attachments import Attachments, compose_options
from gateway.runner.output import is_conversation_message

# The gateway wraps the SDK's own subprocess transport (with socket stdio), so the CLI flags
# still come from ClaudeAgentOptions, and taps the raw JSON before the SDK parses it.
from gateway.runner.sdk_transport import SocketCLITransport


class TappedTransport(Transport):
    """Delegates to a real transport and shows every conversation message to the taps."""

    def __init__(self, inner: Transport, attachments: Attachments) -> None:
        self._inner = inner
        self._attachments = attachments

    async def connect(self) -> None:
        await self._inner.connect()

    async def write(self, data: str) -> None:
        await self._inner.write(data)

    def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        return self._read()

    async def _read(self) -> AsyncIterator[dict[str, Any]]:
        async for message in self._inner.read_messages():
            if is_conversation_message(message):
                self._attachments.tap(message)
            yield message

    async def close(self) -> None:
        await self._inner.close()

    def is_ready(self) -> bool:
        return self._inner.is_ready()

    async def end_input(self) -> None:
        await self._inner.end_input()


async def query(
    *,
    prompt: str | AsyncIterable[dict[str, Any]],
    options: ClaudeAgentOptions | None = None,
    transport: Transport | None = None,
    attachments: Attachments | None = None,
    policy: Sequence[str] | None = None,
) -> AsyncIterator[Message]:
    """`claude_agent_sdk.query` with the gateway attached: same arguments, same messages.

    By default the gateway attaches what `agent-gateway run` does: the policy (the `policy`
    files, else AGENT_GATEWAY_POLICY), the pre-compaction archive and tracing (OTEL_*).
    Passing `attachments` replaces that with exactly what they hold. Partial-stream events
    reach the caller only when `options.include_partial_messages` asked for them; the
    gateway always requests them for its own taps. A team budget applies as to
    `agent-gateway run` (AGENT_GATEWAY_TOKENS_FILE and AGENT_GATEWAY_TOKEN): used up, the
    run does not start (BudgetRefused); else it is capped and charged.
    """
    options = options or ClaudeAgentOptions()
    forward_partial = options.include_partial_messages
    attached = attachments
    budget = None
    if attached is None:
        from gateway.runner.account import RunAccount
        from gateway.runner.budget import RunBudget, admit
        from gateway.runner.wiring import attach_gateway

        attached = Attachments()
        paths = list(policy) if policy is not None else policy_paths_from_env()
        text = prompt if isinstance(prompt, str) else None
        budget = RunBudget.from_env()
        account = None
        if budget is not None:
            options = await admit(budget, options, sys.stderr)
            account = RunAccount(team=budget.team, budget=budget, check_first=False)
        options = attach_gateway(text, options, paths, attached, sys.stderr, account)
    composed = compose_options(options, attached)
    inner = transport or SocketCLITransport(prompt=prompt, options=composed)
    try:
        async for message in sdk_query(
            prompt=prompt, options=composed, transport=TappedTransport(inner, attached)
        ):
            if isinstance(message, StreamEvent) and not forward_partial:
                continue
            yield message
    finally:
        attached.close()
        if budget is not None:
            await budget.charge()
