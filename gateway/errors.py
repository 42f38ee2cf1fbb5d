"""One base error; subclasses carry structured fields so callers can render one-line messages."""

from __future__ import annotations


class GatewayError(Exception):
    """Base for every error the gateway raises on purpose. `str()` is one line for the user."""

    exit_code: int = 2


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
    """A hash chain (audit log or archive manifests) that does not verify; `position` is the
    first bad one, 1-based."""

    exit_code = 1

    def __init__(self, message: str, *, position: int | None = None) -> None:
        self.position = position
        super().__init__(message)
