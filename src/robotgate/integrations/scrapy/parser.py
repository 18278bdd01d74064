"""robotgate's robots.txt matching for Scrapy's own middleware, with one setting::

    # settings.py
    ROBOTSTXT_OBEY = True
    ROBOTSTXT_PARSER = "robotgate.integrations.scrapy.RobotgateRobotParser"

Scrapy then fetches each site's robots.txt as usual and asks this class,
which matches as RFC 9309 says (longest match wins, ``*`` and ``$``, percent
encoding normalised, Google's key typos accepted).  The optional setting
``ROBOTGATE_DIALECT = "classic"`` selects the 1994 standard as LWP applies it.

The class implements Scrapy's ``RobotParser`` interface (``from_crawler``,
``allowed``, ``crawl_delay``) by duck typing: Scrapy loads it by name and never
checks its base class, so this module does not import Scrapy.

Scrapy hands the parser only the body of the robots.txt response, not its
status: a 5xx answer is parsed like any page (usually allowing everything)
rather than treated as "unreachable, disallow all" as RFC 9309 and
:class:`~robotgate.RobotGate` do.  Scrapy's middleware also lets requests
through while robots.txt is still being fetched, and paces nothing: for the
status policy, the single flight and pacing, use
:class:`robotgate.integrations.scrapy.RobotGateMiddleware` instead.
"""

from __future__ import annotations

from typing import Any, TypeVar

from ...agents import robot_name
from ...decision import Decision
from ...robots import DIALECTS, RobotsTxt

__all__ = ["RobotgateRobotParser"]

_P = TypeVar("_P", bound="RobotgateRobotParser")


def _text(value: str | bytes) -> str:
    # Scrapy passes URLs as str and User-Agent headers as bytes.
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _agent(value: str | bytes) -> str:
    # The robot a browser-style User-Agent names, as the gate matches it.
    agent = _text(value)
    return robot_name(agent) or agent


class RobotgateRobotParser:
    """A Scrapy ``ROBOTSTXT_PARSER`` backed by :class:`~robotgate.RobotsTxt`.

    >>> rp = RobotgateRobotParser(b"User-agent: *\\nDisallow: /private/\\n")
    >>> rp.allowed("https://example.com/private/x", b"MyBot/1.0")
    False
    >>> print(rp.decide("https://example.com/private/x", "MyBot/1.0"))
    disallowed by 'Disallow: /private/' (line 2) in the group for '*' (no group names this agent)
    """

    def __init__(
        self,
        robotstxt_body: bytes | str,
        spider: Any = None,
        *,
        dialect: str = "rfc9309",
        url: str | None = None,
    ) -> None:
        if dialect not in DIALECTS:
            raise ValueError(f"ROBOTGATE_DIALECT must be one of {DIALECTS}, not {dialect!r}")
        self.spider = spider
        # Bytes are decoded tolerantly (UTF-8, BOM dropped, bad bytes replaced),
        # and only the first 500 KiB are read, as RFC 9309 allows.
        self.rules = RobotsTxt.parse(
            robotstxt_body if robotstxt_body is not None else b"",
            dialect="classic" if dialect == "classic" else "rfc9309",
            url=url,
        )

    @classmethod
    def of(cls: type[_P], rules: RobotsTxt, spider: Any = None) -> _P:
        """A parser for ``rules`` already parsed (what the middleware announces)."""
        parser = cls.__new__(cls)
        parser.spider = spider
        parser.rules = rules
        return parser

    @classmethod
    def from_crawler(cls: type[_P], crawler: Any, robotstxt_body: bytes | str) -> _P:
        """Scrapy's factory: ``crawler`` gives the spider and the settings."""
        spider = getattr(crawler, "spider", None) if crawler else None
        settings = getattr(crawler, "settings", None) if crawler else None
        dialect = "rfc9309"
        if settings is not None:
            dialect = str(settings.get("ROBOTGATE_DIALECT") or "rfc9309")
        return cls(robotstxt_body, spider, dialect=dialect)

    def allowed(self, url: str | bytes, user_agent: str | bytes) -> bool:
        """May ``user_agent`` (a User-Agent string or product token) fetch ``url``?"""
        return self.rules.allowed(_text(url), _agent(user_agent))

    def decide(self, url: str | bytes, user_agent: str | bytes) -> Decision:
        """Like :meth:`allowed`, with the reason: the rule and its line, or why none."""
        return self.rules.decide(_text(url), _agent(user_agent))

    def crawl_delay(self, user_agent: str | bytes) -> float | None:
        """The ``Crawl-delay`` of the agent's group in seconds, or None.

        Part of Scrapy's ``RobotParser`` interface since 2.18, but nothing in
        Scrapy (2.19 included) calls it: Scrapy's download delay ignores it.
        :class:`~robotgate.integrations.scrapy.RobotGateMiddleware` honours it.
        """
        return self.rules.crawl_delay(_agent(user_agent))

    def __repr__(self) -> str:
        return f"<RobotgateRobotParser {self.rules!r}>"
