"""The command-hook form of the HTTP hook: relay stdin to a gateway, print its answer.

For hosts that prefer command hooks: a gateway that is down, slow, erroring or answering
nonsense makes this exit 2, which blocks. Standard library only, to start fast.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import IO

from gateway.env import gateway_token
from gateway.errors import EXIT_BLOCK, EXIT_OK


def relay(
    event: str,
    base_url: str,
    stdin: IO[bytes],
    stdout: IO[str],
    stderr: IO[str],
    *,
    timeout_s: float = 10.0,
    sandbox: str = "",
    failed: int = EXIT_BLOCK,
) -> int:
    """`failed`: the exit status when the gateway cannot answer (an observed event's is 1, which
    Claude Code reports and goes on from: 2 at Stop would keep the agent going)."""
    body = stdin.read()
    query = f"?{urllib.parse.urlencode({'sandbox': sandbox})}" if sandbox else ""
    request = urllib.request.Request(
        f"{base_url.rstrip('/')}/hooks/{event}{query}",
        data=body,
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    token = gateway_token()
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            answer = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return _fail(stderr, f"gateway answered HTTP {exc.code} for {event}", failed)
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return _fail(stderr, f"gateway unreachable for {event}: {reason}", failed)
    except ValueError:
        return _fail(stderr, f"gateway answered invalid JSON for {event}", failed)
    if not isinstance(answer, dict):
        return _fail(stderr, f"gateway answered a non-object for {event}", failed)
    stdout.write(json.dumps(answer) + "\n")
    return EXIT_OK


def _fail(stderr: IO[str], message: str, status: int) -> int:
    what = "blocked" if status == EXIT_BLOCK else "not recorded"
    stderr.write(f"agent-gateway: {what}: {' '.join(message.split())}\n")
    return status
