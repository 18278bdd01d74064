"""The plain parts of a fake gate for the crawl frontier (tests and benchmarks alike).

:class:`robotgate.crawl.CrawlGate` names what the frontier needs of a gate; a fake
that plays robots.txt, pacing and requests (``pace_key``, ``allowed``, ``decide``,
``fetch``) takes the rest from :class:`PlainCrawlGate`: no wait, no usage, no
directives, no TDMRep, nobody listening.  :class:`PlainAnswer` is an answer with
what the frontier reads of one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from robotgate import PageDirectives
from robotgate.decision import Decision
from robotgate.policy.hops import IsPrivate
from robotgate.policy.hops import is_private as private_by_default
from robotgate.policy.tdm import TdmVerdict, tdm_verdict
from robotgate.politeness.waits import NO_WAIT, ServerWait

if TYPE_CHECKING:
    from robotgate.crawl import CrawlResponse

__all__ = ["PlainAnswer", "PlainCrawlGate"]


@dataclass
class PlainAnswer:
    """An answer as the frontier reads it: status, URL, headers and an empty body."""

    url: str
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)

    async def read(self) -> bytes:
        return b""


class PlainCrawlGate:
    """What a fake gate rarely plays: every server ready, nothing reported."""

    max_per_host = 1
    tdmrep = False
    is_private: IsPrivate = staticmethod(private_by_default)

    def server_wait(self, url: str) -> ServerWait:
        return NO_WAIT

    def usage(self, url: str, headers: Mapping[str, str] | None = None) -> dict[str, bool]:
        return {}

    def directives(self, response: CrawlResponse, body: bytes | None = None) -> PageDirectives:
        return PageDirectives()

    async def tdm(self, url: str, page: PageDirectives | None = None, *,
                  pointed_by: str | None = None) -> TdmVerdict:
        return tdm_verdict(url, None, None, page)

    def report_skipped(self, url: str, decision: Decision) -> None:
        return None

    def report_waited(self, url: str, seconds: float, reason: str) -> None:
        return None
