"""Every span attribute name the gateway emits, once.

GenAI names follow the OpenTelemetry GenAI semantic conventions (latest experimental);
the gateway's own attributes live under the `agent_gateway.` namespace. docs/tracing.md's
"Span attributes" table lists all of them; a test keeps the two in step.
"""

from __future__ import annotations

from typing import Final

# --- GenAI semantic conventions -------------------------------------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_AGENT_NAME: Final = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_USAGE_COST: Final = "gen_ai.usage.cost"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE: Final = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
ERROR_TYPE: Final = "error.type"
HTTP_RESPONSE_STATUS_CODE: Final = "http.response.status_code"

# Values of gen_ai.operation.name and gen_ai.provider.name.
OP_INVOKE_AGENT: Final = "invoke_agent"
OP_CHAT: Final = "chat"
OP_EXECUTE_TOOL: Final = "execute_tool"
PROVIDER_ANTHROPIC: Final = "anthropic"

# --- agent_gateway: the run's result (root span) ---------------------------------------------
RESULT_SUBTYPE: Final = "agent_gateway.result.subtype"
RESULT_IS_ERROR: Final = "agent_gateway.result.is_error"
RESULT_ERRORS: Final = "agent_gateway.result.errors"
RESULT_NUM_TURNS: Final = "agent_gateway.result.num_turns"
RESULT_STOP_REASON: Final = "agent_gateway.result.stop_reason"
RESULT_TERMINAL_REASON: Final = "agent_gateway.result.terminal_reason"
RESULT_TOTAL_COST_USD: Final = "agent_gateway.result.total_cost_usd"
RESULT_DURATION_MS: Final = "agent_gateway.result.duration_ms"
RESULT_DURATION_API_MS: Final = "agent_gateway.result.duration_api_ms"
RESULT_COUNT: Final = "agent_gateway.result.count"
RESULT_PERMISSION_DENIALS: Final = "agent_gateway.result.permission_denials"
RESULT_USAGE_INPUT_TOKENS: Final = "agent_gateway.result.usage.input_tokens"
RESULT_USAGE_OUTPUT_TOKENS: Final = "agent_gateway.result.usage.output_tokens"
RESULT_USAGE_CACHE_READ_INPUT_TOKENS: Final = "agent_gateway.result.usage.cache_read_input_tokens"
RESULT_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = (
    "agent_gateway.result.usage.cache_creation_input_tokens"
)
RESULT_MODEL_USAGE_PREFIX: Final = "agent_gateway.result.model_usage"
"""Per-model usage: `{prefix}.{model}.{input_tokens|output_tokens|cache_read_input_tokens|
cache_creation_input_tokens|cost_usd}`. Unlike `usage`, it includes subagents."""
MODEL_USAGE_FIELDS: Final = (
    ("inputTokens", "input_tokens"),
    ("outputTokens", "output_tokens"),
    ("cacheReadInputTokens", "cache_read_input_tokens"),
    ("cacheCreationInputTokens", "cache_creation_input_tokens"),
    ("costUSD", "cost_usd"),
)
SESSION_MODEL: Final = "agent_gateway.session.model"
CLAUDE_CODE_VERSION: Final = "agent_gateway.claude_code.version"

# --- agent_gateway: cost -----------------------------------------------------------------------
COST_CHAT_SUM_USD: Final = "agent_gateway.cost.chat_sum_usd"
COST_COMPACTION_USD: Final = "agent_gateway.cost.compaction_usd"
COST_RUN_USD: Final = "agent_gateway.cost.run_usd"
"""What this run spent by Claude Code's count: its results' model_usage_since_last_result
(total_cost_usd also counts a resumed session's earlier processes)."""
COST_DIFFERENCE_USD: Final = "agent_gateway.cost.difference_usd"
"""chat_sum_usd + compaction_usd - run_usd: nonzero is a bug to look at."""
COST_UNPRICED_CHATS: Final = "agent_gateway.cost.unpriced_chats"
COST_UNPRICED_MODEL: Final = "agent_gateway.cost.unpriced_model"
TOOL_SPLIT_COST_USD: Final = "agent_gateway.tool.split_cost_usd"

# --- agent_gateway: chat -----------------------------------------------------------------------
CHAT_TTFT_MS: Final = "agent_gateway.chat.ttft_ms"
CHAT_USAGE_SOURCE: Final = "agent_gateway.chat.usage_source"
"""`stream` (message_start + message_delta: exact), `transcript` (a subagent's response, which
the partial stream never carries: the final usage and stop_reason from its transcript, exact)
or `assistant_message` (no partial stream: message_start's usage, so output tokens and finish
reason are not recorded)."""
CHAT_CACHE_CREATION_5M_INPUT_TOKENS: Final = "agent_gateway.chat.cache_creation_5m_input_tokens"
CHAT_CACHE_CREATION_1H_INPUT_TOKENS: Final = "agent_gateway.chat.cache_creation_1h_input_tokens"
CHAT_RETRY_COUNT: Final = "agent_gateway.chat.retry_count"
CHAT_ERROR_MESSAGE: Final = "agent_gateway.chat.error_message"
PARENT_TOOL_USE_ID: Final = "agent_gateway.parent_tool_use_id"

# --- agent_gateway: turn -----------------------------------------------------------------------
TURN_INDEX: Final = "agent_gateway.turn.index"
TURN_TOOL_CALLS: Final = "agent_gateway.turn.tool_calls"
TURN_COST_USD: Final = "agent_gateway.turn.cost_usd"

# --- agent_gateway: tool call and its policy decision ------------------------------------------
TOOL_IS_ERROR: Final = "agent_gateway.tool.is_error"
TOOL_PERMISSION_DECISION: Final = "agent_gateway.tool.permission_decision"
"""What Claude Code reported in tool_result_meta: `accept` or `reject`."""
TOOL_PERMISSION_SOURCE: Final = "agent_gateway.tool.permission_source"
TASK_ID: Final = "agent_gateway.task.id"
TASK_STATUS: Final = "agent_gateway.task.status"
POLICY_DECISION: Final = "agent_gateway.policy.decision"
POLICY_RULE_ID: Final = "agent_gateway.policy.rule_id"
POLICY_REASON: Final = "agent_gateway.policy.reason"
POLICY_WOULD_DENY: Final = "agent_gateway.policy.would_deny"
POLICY_FILES: Final = "agent_gateway.policy.files"
"""On the root: how many policy files were in force; 0 means the run had no policy at all."""

# --- agent_gateway: compaction -----------------------------------------------------------------
COMPACTION_TRIGGER: Final = "agent_gateway.compaction.trigger"
COMPACTION_PRE_TOKENS: Final = "agent_gateway.compaction.pre_tokens"
COMPACTION_POST_TOKENS: Final = "agent_gateway.compaction.post_tokens"
COMPACTION_DURATION_MS: Final = "agent_gateway.compaction.duration_ms"
COMPACTION_RESULT: Final = "agent_gateway.compaction.result"
COMPACTION_ERROR: Final = "agent_gateway.compaction.error"
COMPACTION_ARCHIVE_ID: Final = "agent_gateway.compaction.archive_id"
COMPACTION_ARCHIVE_ERROR: Final = "agent_gateway.compaction.archive_error"
COMPACTION_COST_USD: Final = "agent_gateway.compaction.cost_usd"
"""The summary request's cost: the query's tokens beyond its chat spans', priced."""

# --- agent_gateway: server mode ----------------------------------------------------------------
AGENT_ID: Final = "agent_gateway.agent_id"
"""Behind `serve`: the subagent (x-claude-code-agent-id / hook agent_id) a span belongs to."""
SESSION_END_REASON: Final = "agent_gateway.session.end_reason"
"""Behind `serve`: the SessionEnd hook's reason, on the root."""

# --- agent_gateway: bookkeeping ----------------------------------------------------------------
INCOMPLETE: Final = "agent_gateway.incomplete"
"""Set on a span the stream ended before it finished (closed at the end of the run)."""
