"""A robots.txt transport for tests of the fetch flow: answers as told, records every request."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from robotgate.policy.fetch_flow import RobotsRequest, RobotsResponse

Answer = RobotsResponse | dict[str, RobotsResponse] | Callable[[RobotsRequest], RobotsResponse]


class FakeTransport:
    """Answers ``answer``: one response for every request, a table by URL, or a function of
    the request; ``raises`` instead when set.  With ``held`` every answer waits for
    ``release``; with ``hang`` none comes.  Bodies are cut at the request's ``max_bytes``, as a
    real transport reads them."""

    def __init__(self, answer: Answer | None = None, *, raises: BaseException | None = None,
                 held: bool = False, hang: bool = False) -> None:
        self.answer: Answer = answer if answer is not None else {}
        self.raises = raises
        self.hang = hang
        self.requests: list[RobotsRequest] = []
        self.finished = 0
        self.release = asyncio.Event()
        if not held:
            self.release.set()

    async def send(self, request: RobotsRequest) -> RobotsResponse:
        self.requests.append(request)
        await asyncio.sleep(0)
        await self.release.wait()
        if self.hang:
            await asyncio.Event().wait()
        if self.raises is not None:
            raise self.raises
        answer = self.answer
        if isinstance(answer, RobotsResponse):
            resp = answer
        elif isinstance(answer, dict):
            resp = answer[request.url]
        else:
            resp = answer(request)
        self.finished += 1
        if resp.body is None or len(resp.body) <= request.max_bytes:
            return resp
        return RobotsResponse(resp.status, resp.headers, resp.body[: request.max_bytes],
                              resp.url, resp.refused)
