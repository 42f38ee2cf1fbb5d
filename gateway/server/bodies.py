"""Request bodies under limits: size (before and after decompression), content encoding and
JSON nesting depth. Every limit is a BodyError carrying the 4xx to answer, never an exception
that turns into a 500.

aiohttp's own decompression is switched off for the whole app (see app.py), so the proxy
forwards bodies byte for byte and the hooks decode here, where the limits are.
"""

from __future__ import annotations

import asyncio
import json
import re
import zlib
from typing import Any, NamedTuple, cast

from aiohttp import web

from gateway.errors import one_line
from gateway.types import JSONObject

MAX_DEPTH = 64
"""Hook inputs nest a handful of levels (tool_input objects); MCP inputs a few more."""


class BodyError(Exception):
    """A body the gateway will not read: `status` is the 4xx, `str()` says why in one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status

    def __reduce__(self) -> tuple[type[BodyError], tuple[int, str]]:
        return (BodyError, (self.status, str(self)))  # raised in a parsing process too


async def read_limited(request: web.Request, limit: int, timeout_s: float) -> bytes:
    """The raw body as sent (still encoded), never buffered past `limit` bytes, whole within
    `timeout_s` (a client sending a byte at a time holds nothing for long): 413, 408."""
    if request.content_length is not None and request.content_length > limit:
        raise BodyError(413, f"body larger than {size_text(limit)}")
    data = bytearray()
    try:
        async with asyncio.timeout(timeout_s):
            while chunk := await request.content.read(limit + 1 - len(data)):
                data += chunk
                if len(data) > limit:
                    raise BodyError(413, f"body larger than {size_text(limit)}")
    except TimeoutError:
        raise BodyError(408, f"the body did not arrive within {timeout_s:g} s "
                             f"({len(data)} bytes came)") from None
    return bytes(data)


def decode(raw: bytes, content_encoding: str, limit: int) -> bytes:
    """Undo gzip or deflate, producing at most `limit` bytes (a bomb stops there)."""
    encoding = content_encoding.strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding in ("gzip", "x-gzip"):
        return _inflate(raw, zlib.MAX_WBITS | 16, "gzip", limit)
    if encoding == "deflate":
        # RFC 9110 deflate is the zlib format; some clients send the raw stream.
        try:
            return _inflate(raw, zlib.MAX_WBITS, "deflate", limit)
        except BodyError as exc:
            if exc.status != 400:
                raise
            return _inflate(raw, -zlib.MAX_WBITS, "deflate", limit)
    raise BodyError(415, f"unsupported Content-Encoding {encoding!r} (use gzip, deflate or none)")


def _inflate(raw: bytes, wbits: int, name: str, limit: int) -> bytes:
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(raw, limit + 1)
    except zlib.error as exc:
        raise BodyError(400, f"invalid {name} body: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise BodyError(413, f"body larger than {size_text(limit)} once decompressed")
    if not inflater.eof:
        raise BodyError(400, f"invalid {name} body: truncated")
    if inflater.unused_data:
        raise BodyError(400, f"invalid {name} body: data after the end of the stream")
    return out


class JSONBody(NamedTuple):
    raw: bytes
    """The body as JSON bytes (decompressed)."""
    value: JSONObject


def decode_object(raw: bytes, content_encoding: str, limit: int) -> JSONBody:
    """`decode` then `parse_object`."""
    data = decode(raw, content_encoding, limit)
    return JSONBody(data, parse_object(data))


def parse_object(data: bytes, max_depth: int = MAX_DEPTH) -> JSONObject:
    """A JSON object nested at most `max_depth` deep."""
    try:
        value = json.loads(data, parse_constant=_not_json)
    except RecursionError:
        raise BodyError(400, f"JSON nested deeper than {max_depth} levels") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BodyError(400, f"malformed JSON: {one_line(exc)}") from None
    if not isinstance(value, dict):
        raise BodyError(400, "expected a JSON object")
    value = cast(JSONObject, value)
    if _ESCAPED_SURROGATE.search(data) and _holds_lone_surrogate(value):
        # Kept, it would be recorded altered (U+FFFD): ids are kept exactly or refused.
        raise BodyError(400, "a string holds a lone UTF-16 surrogate (not Unicode text)")
    # Fewer brackets than the limit cannot nest deeper than it: skip the walk.
    if data.count(b"[") + data.count(b"{") > max_depth and _depth_exceeds(value, max_depth):
        raise BodyError(400, f"JSON nested deeper than {max_depth} levels")
    return value


_ESCAPED_SURROGATE = re.compile(rb"\\[uU][dD][89a-fA-F]")


def _not_json(constant: str) -> Any:
    """NaN and Infinity: Python reads them, JSON has no such values."""
    raise ValueError(f"{constant} is not a JSON value")


def _holds_lone_surrogate(value: JSONObject) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def size_text(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit % (1024 * 1024) == 0 else f"{limit} bytes"
