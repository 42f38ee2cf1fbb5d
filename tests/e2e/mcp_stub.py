"""A stdio MCP server with two tools that do nothing: enough for Claude Code to list and
call them (tests/e2e/test_rule_parity.py)."""

import json
import sys

TOOLS = ["drop_table", "query"]


def answer(request_id: object, result: object) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        continue
    if method == "initialize":
        answer(request_id, {"protocolVersion": message["params"]["protocolVersion"],
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "stub", "version": "1"}})
    elif method == "tools/list":
        answer(request_id, {"tools": [{"name": n, "description": n, "inputSchema":
                                       {"type": "object", "properties": {}}} for n in TOOLS]})
    elif method == "tools/call":
        answer(request_id, {"content": [{"type": "text", "text": "called " +
                                         message["params"]["name"]}]})
    else:
        answer(request_id, {})
