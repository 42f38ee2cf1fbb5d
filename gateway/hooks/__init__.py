"""Hooks: one decision path for every vantage point.

`engine` decides, records and renders (the SDK callback of `agent-gateway run`, the HTTP hooks
of `serve` and its decision workers all go through it); `command` is Claude Code's
command-hook process contract (`agent-gateway hook pre-tool-use|pre-compact [--remote URL]`);
`compact` archives before compaction; `remote` relays a command hook to a gateway; `trail`
sends audit records to the off-host copy. May import the cores; never `sdk`, `server`, `cli`.
"""
