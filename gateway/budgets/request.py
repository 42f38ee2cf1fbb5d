"""What a Messages API request can cost at most, read from its whole body: pure.

The body is read as the API reads it: one JSON object whose top-level keys are unique. A key
given twice (`"model"` twice, or `"max_tokens"`) is refused: JSON parsers disagree on which
one wins (Python keeps the last, others the first or reject), so the gateway could price a
model or a max_tokens the API does not use.

The input bound: every token the API bills for text covers at least one byte of that text in
UTF-8 (a tokenizer splits the text into non-empty pieces), and JSON never writes a text in
fewer bytes than its UTF-8 (escapes only lengthen it), so the body's size in bytes bounds the
tokens of every text it carries. To that are added the API's own framing (the tool-use system
prompt, at most 346 tokens on the published tables, and turn markers; the JSON framing of
each message is bytes that are not tokens) and, for each image, the most an image is billed
(its tokens follow its pixels, not its bytes). Input the API fetches itself (documents and
images by URL or file id, server tools such as web search) is not in the body and not bounded
here (docs/metrics.md says so).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

FRAMING_TOKENS = 1024
"""Tokens the API adds around what the body carries (tool-use system prompt, turn markers)."""
IMAGE_TOKENS = 5000
"""The most one image is billed: the published ceiling is about 1,600 tokens (images are
scaled to about 1.15 megapixels); this leaves room for larger limits on newer models."""

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


class UnreadableRequest(ValueError):
    """A body whose cost cannot be bounded: answered 400 before anything is forwarded."""


@dataclass(frozen=True, slots=True)
class CallShape:
    model: str
    max_tokens: int
    input_tokens_bound: int
    """At least the input tokens (of any kind: plain, cache read or written) it is billed."""
    images: int = 0


def call_shape(body: bytes) -> CallShape:
    """The model, max_tokens and input bound of a (decoded) Messages API request body."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableRequest("the request body is not UTF-8") from None
    fields = top_level_fields(text)
    model = fields.get("model")
    if not isinstance(model, str) or not model:
        raise UnreadableRequest("the request names no model")
    max_tokens = fields.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise UnreadableRequest("the request has no max_tokens (a positive integer)")
    images = count_images(fields.get("messages")) + count_images(fields.get("system"))
    bound = len(body) + FRAMING_TOKENS + images * IMAGE_TOKENS
    return CallShape(model, max_tokens, bound, images)


def top_level_fields(text: str) -> dict[str, Any]:
    """The object's top-level fields; UnreadableRequest when it is not one JSON object or a
    key comes twice (escapes decoded first: `"\\u006dodel"` is `model`)."""
    try:
        return _fields(text)
    except (ValueError, IndexError) as exc:
        if isinstance(exc, UnreadableRequest):
            raise
        raise UnreadableRequest(f"the request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise UnreadableRequest("the request body nests too deep to be read") from None


def _fields(text: str) -> dict[str, Any]:
    at = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if text[at:at + 1] != "{":
        raise UnreadableRequest("the request body is not a JSON object")
    at = _WS.match(text, at + 1).end()  # type: ignore[union-attr]
    fields: dict[str, Any] = {}
    if text[at:at + 1] == "}":
        at = _WS.match(text, at + 1).end()  # type: ignore[union-attr]
    else:
        while True:
            if text[at:at + 1] != '"':
                raise ValueError(f"expected a key at byte {at}")
            key, at = scanstring(text, at + 1)
            at = _WS.match(text, at).end()  # type: ignore[union-attr]
            if text[at:at + 1] != ":":
                raise ValueError(f"expected ':' at {at}")
            at = _WS.match(text, at + 1).end()  # type: ignore[union-attr]
            value, at = _DECODER.raw_decode(text, at)
            if key in fields:
                raise UnreadableRequest(
                    f"the request gives {key!r} twice; which one the API would use is not "
                    "certain, so the gateway cannot price it"
                )
            fields[key] = value
            at = _WS.match(text, at).end()  # type: ignore[union-attr]
            sep = text[at:at + 1]
            at = _WS.match(text, at + 1).end()  # type: ignore[union-attr]
            if sep == "}":
                break
            if sep != ",":
                raise ValueError(f"expected ',' or '}}' at {at}")
    if at != len(text):
        raise ValueError("data after the object")
    return fields


def count_images(value: Any) -> int:
    """Content blocks of type image, at any depth (tool results carry them too)."""
    found = 0
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "image":
                found += 1
            stack.extend(v for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, dict | list))
    return found
