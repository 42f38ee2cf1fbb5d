"""Every span attribute name the gateway emits, once.

GenAI names follow the OpenTelemetry GenAI semantic conventions as generated in
opentelemetry-semantic-conventions 0.66b2 (schema 1.44.0; the GenAI registry has since moved
to the semantic-conventions-genai repository, whose names these are); they are taken from
that package wherever it defines them. OpenInference names (for Phoenix/Arize) come from the
OpenInference semantic conventions. The gateway's own attributes live under the
`agent_gateway.` namespace. docs/tracing.md's "Span attributes" table lists all of them; a
test keeps the two in step.
"""

from __future__ import annotations

from typing import Final

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as _gen_ai
from opentelemetry.semconv.attributes import error_attributes as _error
from opentelemetry.semconv.attributes import http_attributes as _http

SEMCONV_VERSION: Final = "opentelemetry-semantic-conventions 0.66b2 (schema 1.44.0)"
"""The conventions followed, named in the docs."""

# --- GenAI semantic conventions -------------------------------------------------------------
GEN_AI_OPERATION_NAME: Final = _gen_ai.GEN_AI_OPERATION_NAME
GEN_AI_PROVIDER_NAME: Final = _gen_ai.GEN_AI_PROVIDER_NAME
GEN_AI_AGENT_NAME: Final = _gen_ai.GEN_AI_AGENT_NAME
GEN_AI_AGENT_ID: Final = _gen_ai.GEN_AI_AGENT_ID
GEN_AI_CONVERSATION_ID: Final = _gen_ai.GEN_AI_CONVERSATION_ID
GEN_AI_REQUEST_MODEL: Final = _gen_ai.GEN_AI_REQUEST_MODEL
GEN_AI_RESPONSE_MODEL: Final = _gen_ai.GEN_AI_RESPONSE_MODEL
GEN_AI_RESPONSE_ID: Final = _gen_ai.GEN_AI_RESPONSE_ID
GEN_AI_RESPONSE_FINISH_REASONS: Final = _gen_ai.GEN_AI_RESPONSE_FINISH_REASONS
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: Final = _gen_ai.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK
GEN_AI_USAGE_INPUT_TOKENS: Final = _gen_ai.GEN_AI_USAGE_INPUT_TOKENS
GEN_AI_USAGE_OUTPUT_TOKENS: Final = _gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = _gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = _gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS
GEN_AI_USAGE_COST: Final = "gen_ai.usage.cost"
"""Not (yet) in the conventions: a fixed contract of this project (DESIGN.md)."""
GEN_AI_TOOL_NAME: Final = _gen_ai.GEN_AI_TOOL_NAME
GEN_AI_TOOL_CALL_ID: Final = _gen_ai.GEN_AI_TOOL_CALL_ID
GEN_AI_TOOL_TYPE: Final = _gen_ai.GEN_AI_TOOL_TYPE
GEN_AI_TOOL_CALL_ARGUMENTS: Final = _gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS
GEN_AI_TOOL_CALL_RESULT: Final = _gen_ai.GEN_AI_TOOL_CALL_RESULT
GEN_AI_TOOL_DEFINITIONS: Final = _gen_ai.GEN_AI_TOOL_DEFINITIONS
GEN_AI_INPUT_MESSAGES: Final = _gen_ai.GEN_AI_INPUT_MESSAGES
GEN_AI_OUTPUT_MESSAGES: Final = _gen_ai.GEN_AI_OUTPUT_MESSAGES
GEN_AI_SYSTEM_INSTRUCTIONS: Final = _gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS
ERROR_TYPE: Final = _error.ERROR_TYPE
HTTP_RESPONSE_STATUS_CODE: Final = _http.HTTP_RESPONSE_STATUS_CODE

# Values of gen_ai.operation.name and gen_ai.provider.name.
OP_INVOKE_AGENT: Final = _gen_ai.GenAiOperationNameValues.INVOKE_AGENT.value
OP_CHAT: Final = _gen_ai.GenAiOperationNameValues.CHAT.value
OP_EXECUTE_TOOL: Final = _gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value
PROVIDER_ANTHROPIC: Final = _gen_ai.GenAiProviderNameValues.ANTHROPIC.value

# --- OpenInference (Phoenix, Arize): on unless AGENT_GATEWAY_OPENINFERENCE=0 ------------------
OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
INPUT_VALUE: Final = "input.value"
INPUT_MIME_TYPE: Final = "input.mime_type"
OUTPUT_VALUE: Final = "output.value"
OUTPUT_MIME_TYPE: Final = "output.mime_type"
SESSION_ID: Final = "session.id"
"""On invoke_agent spans: the conversation id where Langfuse (and OpenInference) look for it."""
OPENINFERENCE_PROJECT_NAME: Final = "openinference.project.name"
"""A resource attribute (OTEL_RESOURCE_ATTRIBUTES): the Phoenix project a trace is filed in."""
# Values of openinference.span.kind.
OI_AGENT: Final = "AGENT"
OI_LLM: Final = "LLM"
OI_TOOL: Final = "TOOL"
OI_CHAIN: Final = "CHAIN"

# --- span events ----------------------------------------------------------------------------
EVENT_POLICY_DENY: Final = "agent_gateway.policy.deny"
"""On an execute_tool span the gateway's policy denied (status stays unset: a deny is the
gateway doing its job, not a failure)."""
EVENT_PERMISSION_REJECT: Final = "agent_gateway.permission.reject"
"""On an execute_tool span Claude Code's own permissions rejected."""

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
POLICY_ENFORCED_BY: Final = "agent_gateway.policy.enforced_by"
"""`hook` or `sandbox`: which layer enforces the decision (gateway.types.EnforcedBy)."""
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

# --- agent_gateway: subagents and server mode ---------------------------------------------------
AGENT_ID: Final = "agent_gateway.agent_id"
"""The subagent (x-claude-code-agent-id / hook agent_id / task id) a span belongs to."""
SESSION_END_REASON: Final = "agent_gateway.session.end_reason"
"""Behind `serve`: the SessionEnd hook's reason, on the root."""
SESSION_IDLE_CLOSED: Final = "agent_gateway.session.idle_closed"
"""Behind `serve`: the root was closed by the idle timeout (the process never said
SessionEnd: killed, or still silent), so it is also marked incomplete."""

# --- agent_gateway: bookkeeping ----------------------------------------------------------------
INCOMPLETE: Final = "agent_gateway.incomplete"
"""Set on a span the stream ended before it finished (closed at the end of the run)."""
