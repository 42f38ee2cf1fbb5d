"""The loopback http hook endpoint of a run the gateway starts: Claude Code POSTs PreToolUse
and PreCompact to it (the settings come from `hook_settings`), and the answers are computed on
the run's event loop by runner/hook_answers.py, where the message taps run too, so the tracer and
observers see hook events and messages in one thread, in order.

Fail closed: every handler carries `"onFailure": "block"` (on the handler: Claude Code
ignores it on the matcher), so a refused connection, a timeout, a 401 or a 500 blocks the
tool call or the compaction.

Only the Claude Code the run started is answered. A call must carry the run's token (a
random one per run, passed to Claude Code in its environment) and, where the system can tell
(Linux, runner/peer_process.py), come over a socket that Claude Code's own process holds. The
token alone is not enough: the agent's commands inherit Claude Code's environment, and any
process of the same user can read it in /proc/<pid>/environ. A call from anything else is
refused with 403 and logged, and reaches neither the audit log nor the trace. On macOS there
is no /proc, and the token is the only check (docs/run.md).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import secrets
import socketserver
from collections.abc import Callable, Coroutine
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from gateway.env import RUN_HOOK_TOKEN_ENV
from gateway.runner import peer_process
from gateway.runner.hook_answers import HookAnswers

log = logging.getLogger("gateway.runner.hook_endpoint")

TOKEN_ENV = RUN_HOOK_TOKEN_ENV
TIMEOUT_S = {"PreToolUse": 60, "PreCompact": 300}
"""Claude Code's wait for each answer, set in the settings; past it, the call is blocked
(archiving a large transcript is the slow one). A decision is answered well inside it
(hook_answers.DECISION_DEADLINE_S)."""
Route = Callable[[dict[str, Any], bytes], Coroutine[Any, Any, object]]
"""An event's answer from the hook input and the bytes it was read from."""
MAX_BODY = 64 * 1024 * 1024
"""A Write of a large file arrives whole in its hook input."""


class HookEndpoint:
    """`with HookEndpoint(answers, loop) as endpoint:` serves until the block ends."""

    def __init__(self, answers: HookAnswers, loop: asyncio.AbstractEventLoop) -> None:
        self.token = secrets.token_urlsafe(32)
        routes: dict[str, Route] = {
            "/hooks/PreToolUse": answers.pre_tool_use_raw,
            "/hooks/PreCompact": lambda data, _raw: answers.pre_compact(data),
        }
        self._claude = _ClaudeCode(check=peer_process.supported())
        handler = type("Handler", (_Handler,), {
            "routes": routes, "loop": loop, "expected": f"Bearer {self.token}".encode(),
            "claude": self._claude,
        })
        self._server = _Server(("127.0.0.1", 0), handler)
        self._loop = loop

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def settings(self) -> dict[str, Any]:
        """Claude Code settings (for --settings) that send PreToolUse and PreCompact here."""
        hooks: dict[str, list[dict[str, Any]]] = {}
        for event, timeout in TIMEOUT_S.items():
            handler = {
                "type": "http",
                "url": f"{self.url}/hooks/{event}",
                "timeout": timeout,
                "headers": {"Authorization": f"Bearer ${TOKEN_ENV}"},
                "allowedEnvVars": [TOKEN_ENV],
                "onFailure": "block",
            }
            matcher: dict[str, Any] = {"hooks": [handler]}
            if event == "PreToolUse":
                matcher = {"matcher": "*", **matcher}
            hooks[event] = [matcher]
        return {
            "hooks": hooks,
            "allowedHttpHookUrls": [f"{self.url}/*"],
            "httpHookAllowedEnvVars": [TOKEN_ENV],
            # Flag settings outrank project and user settings: a settings file the agent
            # could write does not switch the gateway's hooks off.
            "disableAllHooks": False,
        }

    def env(self) -> dict[str, str]:
        return {TOKEN_ENV: self.token}

    def admit(self, pid: int) -> None:
        """Answer the process `pid` (the run's Claude Code, once started) and nothing else."""
        self._claude.pid = pid

    def __enter__(self) -> HookEndpoint:
        # Connections are accepted on the loop (no polling thread to wake or wait for);
        # each is served on a thread of its own, which hands the answer back to the loop.
        self._loop.add_reader(self._server.fileno(), self._server.handle_request)
        return self

    def __exit__(self, *_exc: object) -> None:
        self._loop.remove_reader(self._server.fileno())
        self._server.server_close()


class _ClaudeCode:
    """The process the endpoint answers; `check`: whether this system can tell."""

    def __init__(self, check: bool) -> None:
        self.check = check
        self.pid: int | None = None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    timeout = 0  # handle_request only when the loop saw a connection waiting

    def server_bind(self) -> None:
        # HTTPServer's own looks the host's name up (a DNS query at every run's start).
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: one connection for the whole run
    # Headers and body go out in two writes: with Nagle's algorithm the second waits for
    # Claude Code's delayed ACK, 40 ms per hook call.
    disable_nagle_algorithm = True
    routes: dict[str, Route]
    loop: asyncio.AbstractEventLoop
    expected: bytes
    claude: _ClaudeCode
    verified = False
    """This connection (one handler per connection) comes from Claude Code's process."""

    def do_POST(self) -> None:
        route = self.routes.get(self.path)
        if route is None:
            self._reply(404, {"error": "no such hook"})
            return
        given = self.headers.get("Authorization", "").encode()
        if not hmac.compare_digest(given, self.expected):
            self._reply(401, {"error": "unauthorized"})
            return
        refusal = self._not_claude_code()
        if refusal:
            log.warning("refused a hook call that is not the run's Claude Code's: %s", refusal)
            self._reply(403, {"error": "only the run's Claude Code is answered here"})
            return
        try:
            length = int(self.headers.get("Content-Length") or "")
        except ValueError:
            self._reply(411, {"error": "Content-Length required"})
            return
        if not 0 <= length <= MAX_BODY:
            self._reply(413, {"error": "hook input too large"})
            return
        raw = self.rfile.read(length)
        try:
            data = json.loads(raw)
        except ValueError:
            self._reply(400, {"error": "hook input is not JSON"})
            return
        if not isinstance(data, dict):
            self._reply(400, {"error": "hook input is not a JSON object"})
            return
        event = self.path.rsplit("/", 1)[-1]
        try:
            answer: object = asyncio.run_coroutine_threadsafe(route(data, raw), self.loop).result(
                timeout=TIMEOUT_S[event]
            )
        except Exception as exc:  # no answer: Claude Code blocks (onFailure: block)
            log.error("%s not answered: %s", event, exc)
            self._reply(500, {"error": f"{event} not answered"})
            return
        self._reply(200, answer)

    def _not_claude_code(self) -> str:
        """'' when this connection is Claude Code's (checked once: a socket cannot change
        hands, and Claude Code keeps one connection for the run); else why not."""
        if self.verified or not self.claude.check:
            return ""
        pid = self.claude.pid
        if pid is None:
            return "Claude Code has not started"
        peer = self.client_address[:2]
        host, port = cast("tuple[str, int]", self.server.server_address)[:2]
        why = peer_process.holds_connection(pid, (str(peer[0]), int(peer[1])),
                                            (str(host), int(port)))
        self.verified = not why
        return why

    def _reply(self, status: int, body: object) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        if status != 200:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # Claude Code reports failed hooks itself; a line per call would be noise
