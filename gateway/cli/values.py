"""Option value types: each refuses a bad value while the command line is parsed, so a
command says what is wrong in one line (exit 2) before it binds, starts or writes anything."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from urllib.parse import SplitResult, urlsplit


def positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value} is below 1")
    return number


def positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not number > 0 or math.isinf(number):
        raise argparse.ArgumentTypeError(f"{value} must be a number above 0")
    return number


def port(value: str) -> int:
    """A TCP port, 1 to 65535."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (1 to 65535)")
    return number


def any_port(value: str) -> int:
    """A TCP port, or 0 for any free one."""
    return 0 if value.strip() == "0" else port(value)


def _url(value: str, schemes: tuple[str, ...], example: str, *, host: bool = True
         ) -> SplitResult:
    try:
        parts = urlsplit(value.strip())
        parts.port  # noqa: B018 (raises ValueError for a port out of range)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r} is not a URL: {exc}") from None
    if parts.scheme.lower() not in schemes:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a {' or '.join(s + '://' for s in schemes)} URL "
            f"(for example {example})")
    if host and not parts.hostname:
        raise argparse.ArgumentTypeError(f"{value!r} names no host (for example {example})")
    return parts


def http_url(value: str) -> str:
    """An http:// or https:// URL with a host."""
    _url(value, ("http", "https"), "http://127.0.0.1:8787")
    return value.strip()


def redis_url(value: str) -> str:
    """A URL the redis client opens: redis://, rediss:// or unix://."""
    parts = _url(value, ("redis", "rediss", "unix"), "redis://127.0.0.1:6379/0", host=False)
    if parts.scheme.lower() != "unix" and not parts.hostname:
        raise argparse.ArgumentTypeError(
            f"{value!r} names no host (for example redis://127.0.0.1:6379/0)")
    return value.strip()


def existing(kind: str, test: Callable[[str], bool]) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not test(value):
            what = "does not exist" if not os.path.exists(value) else f"is not a {kind}"
            raise argparse.ArgumentTypeError(f"{value} {what}")
        return value

    check.__name__ = kind
    return check


directory = existing("directory", os.path.isdir)
readable_file = existing("file", os.path.isfile)
