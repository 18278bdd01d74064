"""The robots.txt query interface every dialect implements, and the dialect registry.

:class:`RobotsTxt` names the questions a crawler asks a parsed robots.txt
(may this agent fetch this URL, and why; how fast; which sitemaps).  Each
dialect module subclasses it and registers a parser here; this module knows
no dialect by name except the default, so dialects never import each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, TypeVar, cast

from ..decision import Decision
from ..error_root import Error
from .body import DEFAULT_MAX_BYTES, body_text

__all__ = [
    "DEFAULT_DIALECT",
    "DEFAULT_MAX_BYTES",
    "AgentLeftOut",
    "DelayLine",
    "Parser",
    "RequestRate",
    "RobotsTxt",
    "dialects",
    "register_dialect",
]

#: The dialect :meth:`RobotsTxt.parse` reads when not told otherwise.
DEFAULT_DIALECT = "rfc9309"


@dataclass(frozen=True, slots=True)
class RequestRate:
    """``Request-rate: 10/1m`` is ``RequestRate(requests=10, seconds=60.0)``."""

    requests: int
    seconds: float

    @property
    def delay(self) -> float:
        """The interval between two requests this rate asks for, in seconds."""
        return self.seconds / self.requests


@dataclass(frozen=True, slots=True)
class DelayLine:
    """A ``Crawl-delay`` or ``Request-rate`` line that applies to an agent, as read.

    ``delay`` is the interval the line asks between two requests, in seconds
    (for a ``Request-rate``, ``rate.delay``); when the line is ignored it is
    None and ``ignored`` says why.
    """

    line: int
    key: str  # "Crawl-delay" or "Request-rate", whatever the spelling in the file
    value: str  # as written, comment and blanks around removed
    delay: float | None
    rate: RequestRate | None = None
    ignored: str | None = None

    def __str__(self) -> str:
        return f"{self.key}: {self.value} (line {self.line})"


class AgentLeftOut(Error, ValueError):
    """A question for an agent whose group was left out of rules kept for another
    (:meth:`RobotsTxt.kept_for`): parse the body again to ask it."""

    def __init__(self, agent: str, kept_for: str) -> None:
        super().__init__(
            f"these robots.txt rules were kept for {kept_for!r} only: the group naming "
            f"{agent!r} was left out (parse the body again to ask for it)")
        self.agent = agent


_R = TypeVar("_R", bound="RobotsTxt")

#: A dialect's parser: decoded robots.txt text and the URL it came from (or None).
Parser = Callable[[str, "str | None"], "RobotsTxt"]

_REGISTRY: dict[str, tuple[Parser, type[RobotsTxt]]] = {}


def register_dialect(name: str, parser: Parser, rules_class: type[RobotsTxt]) -> None:
    """Make ``RobotsTxt.parse(body, dialect=name)`` use ``parser``.

    ``parser`` returns instances of ``rules_class``, so that
    ``rules_class.parse(body)`` reads this dialect too.  Registering a name
    again replaces it.  A ``rules_class`` whose ``ORIGIN_FREE`` is true (it
    inherits it from :class:`~robotgate.robots.rfc9309.Rfc9309Rules`) promises
    that ``parser`` ignores the file's URL: the gate then lets the sites that
    serve the same bytes share one parsed object.
    """
    _REGISTRY[name] = (parser, rules_class)


def dialects() -> tuple[str, ...]:
    """The registered dialect names, in registration order."""
    return tuple(_REGISTRY)


def invalid_bytes_of(dialect: str) -> str:
    """How ``dialect`` reads bytes that do not decode: a codec error handler's name."""
    entry = _REGISTRY.get(dialect)
    return entry[1].INVALID_BYTES if entry is not None else "replace"


class RobotsTxt:
    """A parsed robots.txt: ask it whether an agent may fetch a URL, and why.

    The interface both dialects implement (``isinstance(rules, RobotsTxt)``
    holds for either); :meth:`parse` builds one.  A dialect's class defines
    every query that raises NotImplementedError here.  A plain class, not an
    ``abc.ABC``: the compiled build makes ``Rfc9309Rules`` without calling its
    metaclass, and an ABC's subclasses made so share its isinstance answers.

    >>> rules = RobotsTxt.parse(b"User-agent: *\\nDisallow: /private\\nCrawl-delay: 2\\n")
    >>> rules.allowed("https://example.com/private/x", "MyBot/1.0")
    False
    >>> rules.crawl_delay("MyBot/1.0")
    2.0
    """

    __slots__ = ()

    #: The dialect ``cls.parse`` reads by default (each dialect class sets its own).
    DIALECT: ClassVar[str] = DEFAULT_DIALECT
    #: Whether a URL's dot segments (``/a/../b``, ``/%2e%2e/``) are resolved by the
    #: rules themselves, as the client resolves them before sending.
    RESOLVES_DOT_SEGMENTS: ClassVar[bool] = False
    #: The codec error handler for bytes that do not decode (see ``decode_body``).
    INVALID_BYTES: ClassVar[str] = "replace"
    #: Whether the parsed rules are the same whatever URL the file came from, so
    #: that one parsed object may serve every origin that sends the same bytes.
    ORIGIN_FREE: ClassVar[bool] = False

    @classmethod
    def parse(
        cls: type[_R],
        body: str | bytes,
        *,
        dialect: str | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        url: str | None = None,
    ) -> _R:
        """Parse a robots.txt body; never raises on content.

        ``body`` may be bytes (decoded as UTF-8, BOM skipped, invalid bytes
        replaced; see :func:`robotgate.robots.body.decode_body` for bodies
        with a declared charset) or text.  Only the first ``max_bytes`` are
        read.  ``dialect`` is one of :data:`robotgate.robots.DIALECTS`
        (default: the class's own, ``"rfc9309"`` for :class:`RobotsTxt`).
        ``url``, where the file came from, is used by the classic dialect to
        resolve rules and ignore those written for another host.

        Raises ValueError for an unknown dialect, or one whose rules are not
        instances of ``cls`` (``ClassicRobotsTxt.parse(b, dialect="rfc9309")``).
        """
        name = cls.DIALECT if dialect is None else dialect
        try:
            parser, rules_class = _REGISTRY[name]
        except (KeyError, TypeError):
            known = ", ".join(map(repr, _REGISTRY))
            raise ValueError(f"unknown robots.txt dialect {name!r} (known: {known})") from None
        if not issubclass(rules_class, cls):
            raise ValueError(f"{cls.__name__}.parse cannot read the {name!r} dialect")
        return cast(_R, parser(body_text(body, max_bytes, rules_class.INVALID_BYTES), url))

    def kept_for(self: _R, user_agent: str) -> _R:
        """These rules with only what ``user_agent`` reads (its group, and ``*``): what a
        gate, which asks as one agent, keeps of each origin.  Asked for an agent whose
        own group was left out, the result raises :class:`AgentLeftOut`; any other
        agent gets the answer the whole file gives.  A dialect that cannot leave
        anything out returns the rules themselves."""
        return self

    def allowed(self, url: str, user_agent: str) -> bool:
        """May ``user_agent`` fetch ``url`` (an absolute URL or a path with query)?"""
        raise NotImplementedError

    def decide(self, url: str, user_agent: str) -> Decision:
        """Like :meth:`allowed`, with the reason: the rule and its line, or why none."""
        raise NotImplementedError

    def crawl_delay(self, user_agent: str) -> float | None:
        """The ``Crawl-delay`` (seconds) that applies to the agent, if any."""
        raise NotImplementedError

    def request_rate(self, user_agent: str) -> RequestRate | None:
        """The ``Request-rate`` that applies to the agent, if any."""
        raise NotImplementedError

    def delay_lines(self, user_agent: str) -> tuple[DelayLine, ...]:
        """The ``Crawl-delay`` and ``Request-rate`` lines that apply to the agent, in
        file order, each with what it asks or why it is ignored (none in a dialect
        that reads neither key)."""
        return ()

    def delay_line(self, user_agent: str, key: str | None = None) -> DelayLine | None:
        """The line of :meth:`delay_lines` (of those with ``key``, when given) that asks
        for the longest interval, the first of equals; None when none asks anything.

        Where several lines apply to one agent the slowest wins:

        >>> rules = RobotsTxt.parse("User-agent: *\\nCrawl-delay: 2\\nRequest-rate: 1/5s\\n")
        >>> str(rules.delay_line("MyBot"))
        'Request-rate: 1/5s (line 3)'
        >>> rules.delay_line("MyBot", "Crawl-delay").delay
        2.0
        """
        slowest: DelayLine | None = None
        longest = -1.0
        for found in self.delay_lines(user_agent):
            delay = found.delay
            if delay is not None and delay > longest and (key is None or found.key == key):
                slowest, longest = found, delay
        return slowest

    @property
    def sitemaps(self) -> list[str]:
        """``Sitemap`` URLs, file-wide, in order, without duplicates."""
        raise NotImplementedError

    @property
    def agents(self) -> list[str]:
        """The agent names the file's groups (records) name, ``"*"`` included."""
        raise NotImplementedError

