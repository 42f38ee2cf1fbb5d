"""Option value types: each refuses a bad value while the command line is parsed, so a
command says what is wrong in one line (exit 2) before it binds, starts or writes anything."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import SplitResult, urlsplit

N = TypeVar("N", int, float)


def number(value: str, parse: Callable[[str], N], what: str, ok: Callable[[N], bool],
           bounds: str) -> N:
    """`value` parsed, or one line saying it is not `what`, or not within `bounds`."""
    try:
        parsed = parse(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not {what}") from None
    if not ok(parsed):
        raise argparse.ArgumentTypeError(f"{value} is not {what} {bounds}")
    return parsed


def positive_int(value: str) -> int:
    return number(value, int, "a whole number", lambda n: n >= 1, "of 1 or more")


def positive_float(value: str) -> float:
    return number(value, float, "a number", lambda n: n > 0 and not math.isinf(n), "above 0")


def port(value: str) -> int:
    """A TCP port, 1 to 65535."""
    return number(value, int, "a port", lambda n: 1 <= n <= 65535, "(1 to 65535)")


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
