"""`agent-gateway serve`: HTTP hooks, the Messages API proxy and remote runs in one aiohttp app."""
