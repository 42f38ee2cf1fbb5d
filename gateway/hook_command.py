"""`agent-gateway hook pre-tool-use`: the Claude Code command-hook contract.

stdout gets the hook output JSON and the exit status is 0; when no decision can be made
(bad input, unreadable or invalid policy, internal error) the exit status is 2 with one line on
stderr, which Claude Code treats as a block. Never 1: Claude Code reads 1 as "run the tool".
Import cost matters (150 ms per call, interpreter included): this path loads only the compiled
policy cache, the shell parser and the standard library.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import IO, Any

EXIT_OK = 0
EXIT_BLOCK = 2


def run_pre_tool_use(policy_paths: Sequence[str], stdin: IO[bytes] | IO[str], stdout: IO[str],
                     stderr: IO[str]) -> int:
    try:
        return _run(policy_paths, stdin, stdout)
    except Exception as exc:  # the contract: any failure blocks, with a one-line reason
        from gateway.errors import GatewayError

        message = str(exc) if isinstance(exc, GatewayError) else (
            f"internal error: {type(exc).__name__}: {exc}")
        stderr.write("agent-gateway: " + " ".join(message.split()) + "\n")
        stderr.flush()
        return EXIT_BLOCK


def _run(policy_paths: Sequence[str], stdin: IO[Any], stdout: IO[str]) -> int:
    from gateway.audit.log import append_decision
    from gateway.hookio.parse import parse_pre_tool_use
    from gateway.hookio.render import render_pre_tool_use
    from gateway.policy.cache import load_cached
    from gateway.policy.evaluate import decide
    from gateway.policy.protected import protected_paths
    from gateway.settings import cache_secret_path, gateway_home

    raw = stdin.read()
    call = parse_pre_tool_use(raw)
    policy = load_cached(policy_paths, gateway_home() / "cache", cache_secret_path(),
                         protected_paths(policy_paths))
    decision = decide(policy, call)
    append_decision(call, decision)
    stdout.write(json.dumps(render_pre_tool_use(decision)) + "\n")
    stdout.flush()
    return EXIT_OK
