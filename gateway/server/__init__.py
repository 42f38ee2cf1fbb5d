"""`agent-gateway serve`: HTTP hooks, the Messages API proxy and remote runs in one aiohttp
app, with tenants, decision workers and the Claude Code settings generator. `POST
/hooks/PreToolUse` is handled in `service` and decided in `decision_worker` processes by the
one decision path (gateway.handlers.decision). May import the cores, `handlers` and `runner` (remote
runs); never `cli`.
"""
