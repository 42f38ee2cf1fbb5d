"""Runs the gateway starts: `gateway.query` (the claude_agent_sdk signature), the attachments
seam, the SDK hook callbacks (`callbacks`: PreToolUse and PreCompact, answered by the one
decision path in gateway.hooks), the run's tracer and output, and `run.execute` behind
`agent-gateway run`, remote runs and the demo. May import the cores and `hooks`; never
`server` or `cli`.
"""
