"""`agent-gateway serve`: HTTP hooks, the Messages API proxy and remote runs in one aiohttp
app, with tenants, decision workers and the Claude Code settings generator. May import the
cores, `hooks` and `sdk` (remote runs); never `cli`.
"""
