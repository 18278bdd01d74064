"""What the gate did, as typed, immutable events: ``RobotGate(on_event=...)`` hears them.

Every event has ``time`` (Unix time), ``origin`` (``scheme://host[:port]``, or ``""``
when none applies) and ``key`` (the politeness key of the server, or ``""``).
One class per kind; all are emitted by the client-free core, so every client path
(``gate.fetch``, ``gate.middleware``, the httpx transport, the Scrapy middleware,
``gate.crawl``) emits the same ones.  No text of an event carries a secret: in its
``url``, and in any URL or credential header its ``reason`` or ``error`` quotes, the
password (or a token-only user name) is replaced by ``***`` as the event is made,
as logs show it (:func:`robotgate.redaction.redact_text`); the raw URL is the
caller's own (``CrawlResult.url``).  Pure: no I/O, standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from .redaction import redact_text
from .urls import redact

__all__ = [
    "WAIT_REASONS",
    "BackoffEased",
    "BackoffStarted",
    "Event",
    "LocalShortage",
    "ResponseAnswered",
    "RobotsFetched",
    "StoreTrouble",
    "TurnWaited",
    "UrlSkipped",
]

#: Why a request waited for its turn (:attr:`TurnWaited.reason`).
WAIT_REASONS = (
    "delay",  # the gate's (or the host setting's) interval since the server's last request
    "crawl-delay",  # the longer interval robots.txt asks (Crawl-delay, Request-rate)
    "back-off",  # the interval widened after 429/503 answers (or slow ones)
    "retry-after",  # a pause a 429/503's Retry-After asked for
    "stored",  # a pause the store kept from another run or process
    "host-cap",  # the server's requests in flight were at max_per_host
    "global-cap",  # the gate's requests in flight were at max_concurrency
    "fleet-slot",  # the shared store's fleet-wide slot for the server
    "concurrency",  # gate.crawl: the server's turn had come, but every worker was busy
)


@dataclass(frozen=True, slots=True)
class Event:
    """The fields every event has."""

    time: float
    origin: str
    key: str

    def __post_init__(self) -> None:
        # Whoever builds the event, each of its texts (a URL, a reason, an error quoting
        # a foreign exception) leaves without a secret.
        for name in _texts(type(self)):
            value = getattr(self, name)
            if value.__class__ is str and value:
                clean = redact_text(redact(value) if name == "url" else value)
                if clean != value:
                    object.__setattr__(self, name, clean)


_TEXT_FIELDS: dict[type, tuple[str, ...]] = {}


def _texts(kind: type) -> tuple[str, ...]:
    """The names of ``kind``'s text fields (found once per class)."""
    names = _TEXT_FIELDS.get(kind)
    if names is None:
        names = tuple(f.name for f in fields(kind) if f.type in ("str", str))
        _TEXT_FIELDS[kind] = names
    return names


class _HasUrl:
    """An event with a ``url`` (kept without its secret, as every text of an event)."""

    __slots__ = ()
    url: str


@dataclass(frozen=True, slots=True)
class RobotsFetched(Event):
    """An origin's robots.txt was fetched: its ``outcome`` (``Outcome``: ok, unavailable,
    forbidden, unreachable), HTTP ``status`` (0: no answer), body ``size`` in bytes and
    ``seconds`` the fetch took (its waits for a redirect hop's turn included); ``error``
    says why it was unreachable (the network error, or the status answered), else ``""``."""

    outcome: str
    status: int
    size: int
    seconds: float
    error: str = ""


@dataclass(frozen=True, slots=True)
class UrlSkipped(_HasUrl, Event):
    """robots.txt keeps the robot from ``url``: ``reason`` says why (the rule and line,
    or the fetch outcome), as the decision does; ``outcome`` is ``"rules"`` when a rule
    decided, else the decision's outcome.  ``outcome == "unreachable"``: robots.txt
    could not be fetched (the site could not be asked, not refused), and ``error``
    says why; else ``error`` is ``""``."""

    url: str
    reason: str
    outcome: str
    error: str = ""

    @property
    def unreachable(self) -> bool:
        """Whether robots.txt was unreachable, rather than a rule refusing ``url``."""
        return self.outcome == "unreachable"


@dataclass(frozen=True, slots=True)
class TurnWaited(_HasUrl, Event):
    """A request to ``url`` waited ``seconds`` for its server's turn, for ``reason``
    (one of :data:`WAIT_REASONS`, as it stood when the wait began)."""

    url: str
    seconds: float
    reason: str


@dataclass(frozen=True, slots=True)
class ResponseAnswered(_HasUrl, Event):
    """The server answered ``url`` with ``status`` after ``seconds`` (send to headers)."""

    url: str
    status: int
    seconds: float


@dataclass(frozen=True, slots=True)
class BackoffStarted(Event):
    """A 429 or 503 slowed the server down: no request for ``seconds``
    (its Retry-After, else the widened interval)."""

    status: int
    seconds: float


@dataclass(frozen=True, slots=True)
class BackoffEased(Event):
    """A success narrowed the server's back-off to ``extra`` seconds (0: gone)."""

    extra: float


@dataclass(frozen=True, slots=True)
class LocalShortage(Event):
    """This machine ran out of ``resource`` (file descriptors, memory, ports) sending
    the origin's robots.txt: the crawler's failure, not the site's (nothing is kept);
    ``error`` says what to raise.  ``given_up``: the fetch's timeout passed, and the
    caller is told (:class:`robotgate.LocalFailure`); else it is asked again."""

    resource: str
    error: str
    given_up: bool


@dataclass(frozen=True, slots=True)
class StoreTrouble(Event):
    """The store failed to ``what`` (the crawl goes on without it): ``error`` says how."""

    what: str
    error: str
