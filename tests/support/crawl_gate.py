"""A gate-like object for frontier tests: no pacing, no HTTP, every request recorded."""

from __future__ import annotations

import asyncio
from types import TracebackType

from robotgate.decision import Decision
from robotgate.policy.hops import IsPrivate
from robotgate.urls import split_origin
from testbed.crawl_gate import PlainAnswer, PlainCrawlGate

#: An answer: status, URL, headers, an empty body.
Page = PlainAnswer


class _Fetch:
    def __init__(self, gate: LinkGate, url: str) -> None:
        self.gate = gate
        self.url = url

    async def __aenter__(self) -> Page:
        self.gate.fetched.append(self.url)
        if self.gate.latency:
            await asyncio.sleep(self.gate.latency)
        return Page(self.url)

    async def __aexit__(self, t: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        return None


class LinkGate(PlainCrawlGate):
    """Every URL allowed and answered 200 at once (after ``latency``); ``fetched``
    lists the URLs requested, as sent."""

    def __init__(self, latency: float = 0.0, is_private: IsPrivate | None = None) -> None:
        self.latency = latency
        self.fetched: list[str] = []
        self.max_per_host = 4
        if is_private is not None:
            self.is_private = is_private

    def pace_key(self, url: str) -> str:
        return split_origin(url)[0]

    async def allowed(self, url: str) -> bool:
        return True

    async def decide(self, url: str) -> Decision:
        return Decision(True, "allowed")

    def fetch(self, url: str) -> _Fetch:
        return _Fetch(self, url)
