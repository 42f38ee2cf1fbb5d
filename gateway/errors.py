"""One base error; subclasses carry structured fields so callers can render one-line messages.
Also the process exit statuses every command shares, and the one-line form of any exception.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
"""A check that ran and found a problem (`audit verify`, `archive verify`), or a run that
ended in an error result."""
EXIT_USAGE = 2
"""Bad usage, settings or input: nothing was done."""
EXIT_BLOCK = 2
"""A command hook that cannot decide: Claude Code reads 2 as a block. Never 1 there: Claude
Code reads 1 as a non-blocking error, i.e. the tool runs."""


def one_line(exc: BaseException, *, typed: bool = False) -> str:
    """`exc` as one line for a user. `typed` names the exception's type first, for errors
    that are not the gateway's own (an internal error should say what it was)."""
    text = " ".join(str(exc).split())
    if typed and not isinstance(exc, GatewayError):
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text or type(exc).__name__


class GatewayError(Exception):
    """Base for every error the gateway raises on purpose. `str()` is one line for the user."""

    exit_code: int = EXIT_USAGE


class ConfigError(GatewayError):
    """Bad command-line options or settings."""


class PolicyError(GatewayError):
    """A policy file that cannot be used; `str()` reads `file:line: message`."""

    def __init__(self, message: str, *, path: str = "", line: int | None = None) -> None:
        self.path = path
        self.line = line
        self.message = message
        where = f"{path}:{line}: " if path and line is not None else (f"{path}: " if path else "")
        super().__init__(f"{where}{message}")


class HookInputError(GatewayError):
    """Hook input JSON that cannot be decided on."""


class ArchiveError(GatewayError):
    """An archive that could not be written, read or verified."""


class ChainError(GatewayError):
    """A hash chain (audit log or archive manifests) that does not verify."""

    exit_code = EXIT_FAILED
