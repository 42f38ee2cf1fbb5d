"""Hook handlers: one decision path for every vantage point.

`decision.answer_pre_tool_use` parses, decides, records and renders every PreToolUse, and
`compact.answer_pre_compact` archives before every compaction; both fail closed. Their
callers: `command` is Claude Code's command-hook process contract (`agent-gateway hook
pre-tool-use|pre-compact [--remote URL]`); `engine` holds what long-running processes keep
between calls (the answers of the runs the gateway starts, in gateway.runner.hook_answers, the
HTTP hooks' decision workers in gateway.server.decision_worker); `remote` relays a command
hook to a gateway; `trail` sends audit records to the off-host copy. May import the cores;
never `runner`, `server`, `cli`.
"""
