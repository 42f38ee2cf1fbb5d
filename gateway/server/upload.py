"""A Messages API request body, streamed to the upstream as it arrives: under a size limit and a
deadline, and never held whole unless something needs it whole.

A body whose Content-Length is over the limit is refused before a byte of it is read; one sent
without a length is counted as it streams, and refused (the upstream request aborted, so the
upstream never sees a complete request) once it passes the limit. What stays in memory is its
head (the model and max_tokens are written first), or the whole body when it is small enough
for what reads it after the response (content capture), or when a team budget must know the
size of a body sent without Content-Length before anything is forwarded.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from aiohttp import web

from gateway.server.bodies import BodyError, size_text


class Upload:
    def __init__(self, request: web.Request, limit: int, *, timeout_s: float, keep: int) -> None:
        """`keep`: bytes of the head kept (the whole body when it is no longer than that).
        BodyError 413 at once when the Content-Length is over `limit`."""
        self.length = request.content_length
        if self.length is not None and self.length > limit:
            raise BodyError(413, f"request body of {self.length} bytes is larger than the "
                                 f"gateway's limit of {size_text(limit)}")
        self._content = request.content
        self._limit = limit
        self._keep = keep
        self._timeout = timeout_s
        self._deadline = asyncio.get_running_loop().time() + timeout_s
        self._kept = bytearray()
        self._read_ahead = bytearray()
        self.size = 0
        """Bytes read so far."""
        self.ended = False
        self.error: BodyError | None = None
        """Why the body was refused while it streamed (None: it was not)."""

    @property
    def head(self) -> bytes:
        """The first `keep` bytes read (all of them for a small body)."""
        return bytes(self._kept)

    @property
    def whole(self) -> bytes | None:
        """The body, when it was read to its end and kept whole."""
        return bytes(self._kept) if self.ended and self.size <= self._keep else None

    async def peek(self, size: int) -> None:
        """Read ahead until `size` bytes (or the whole body) are in `head`; `chunks` yields
        them first. BodyError when over the limit or late."""
        while len(self._read_ahead) < size and not self.ended:
            self._read_ahead += await self._next()

    async def buffer(self) -> None:
        """Read the whole body now (a budget needs the size of a body sent without
        Content-Length before anything is forwarded)."""
        await self.peek(self._limit + 1)

    async def chunks(self) -> AsyncIterator[bytes | bytearray]:
        """The body as it arrives (what was read ahead first); a refusal is kept in `error`
        and raised, which aborts the upstream request."""
        if self._read_ahead:
            ahead, self._read_ahead = self._read_ahead, bytearray()
            yield ahead
        try:
            while not self.ended and (chunk := await self._next()):
                yield chunk
        except BodyError as exc:
            self.error = exc
            raise

    async def _next(self) -> bytes:
        remaining = self._deadline - asyncio.get_running_loop().time()
        try:
            if remaining <= 0:
                raise TimeoutError
            async with asyncio.timeout(remaining):
                chunk = await self._content.readany()
        except TimeoutError:
            raise BodyError(408, f"the request body did not arrive within {self._timeout:g} s "
                                 f"({self.size} bytes came)") from None
        self.ended = not chunk
        self.size += len(chunk)
        if self.size > self._limit:
            raise BodyError(413, f"request body larger than the gateway's limit of "
                                 f"{size_text(self._limit)}")
        if len(self._kept) < self._keep:
            self._kept += chunk[: self._keep - len(self._kept)]
        return chunk
