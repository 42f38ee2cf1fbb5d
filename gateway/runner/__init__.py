"""Runs the gateway starts: `run.execute` behind `agent-gateway run`, remote runs and the demo
(Claude Code's command line, claude_cli; its hooks on a loopback endpoint, hook_endpoint),
`gateway.query` (the claude_agent_sdk signature; its hooks as SDK callbacks, callbacks), both
answered by hook_answers (the one decision path in gateway.handlers, then the run's tracer,
observers and metrics); the attachments seam, the run's tracer and output. May import the
cores and `handlers`; never `server` or `cli`.
"""
