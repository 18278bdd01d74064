"""What one origin's robots.txt entry means for a robot: rules, verdict, interval.

Pure: :func:`interpret` turns a stored :class:`~robotgate.records.RobotsEntry`
into :class:`SiteRules`, the record the gate's cache holds per origin.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from ..decision import Decision
from ..records import SMALL_BODY, HostState, RobotsEntry
from ..robots import RobotsTxt
from ..robots.body import decode_body
from ..robots.rules import invalid_bytes_of
from ..urls import robots_url
from .fetch import FetchPolicy, outcome_decision
from .pacing import Pacing

__all__ = ["CachedSite", "Interpretation", "ParsedBodies", "SiteRules", "interpret"]

#: ``Decision.outcome`` of an origin skipped because it asks for too long a delay.
SKIPPED = "skipped"


@dataclass(frozen=True, slots=True)
class Interpretation:
    """How the gate reads robots.txt: dialect, LWP conventions, policies, agent."""

    agent: str
    dialect: str = "rfc9309"
    lwp_conventions: bool = False
    fetch: FetchPolicy = field(default_factory=FetchPolicy)
    pacing: Pacing = field(default_factory=Pacing)


class SiteRules:
    """One origin's robots.txt as the gate uses it: an immutable value, made once per
    fetch (:func:`interpret`) and replaced by the next.

    ``verdict`` is set when the whole site has one answer (fetch outcome, or a
    delay beyond what the operator allows); otherwise ``rules`` decide per URL.
    ``interval`` is the origin's own pacing interval.
    """

    __slots__ = ("entry", "fresh_until", "interval", "rules", "verdict")

    def __init__(self, entry: RobotsEntry, rules: RobotsTxt | None, verdict: Decision | None,
                 interval: float) -> None:
        self.entry: Final = entry  # without its body unless small (the store keeps that)
        self.rules: Final = rules
        self.verdict: Final = verdict
        self.fresh_until: Final = entry.fresh_until
        self.interval: Final = interval

    def decide(self, url: str, agent: str) -> Decision:
        """The verdict for ``url`` (a path or an absolute URL of this origin)."""
        if self.verdict is not None:
            return self.verdict
        assert self.rules is not None
        return self.rules.decide(url, agent)

    def allowed(self, url: str, agent: str) -> bool:
        """Cheaper :meth:`decide` when only the verdict matters."""
        if self.verdict is not None:
            return self.verdict.allowed
        assert self.rules is not None
        return self.rules.allowed(url, agent)


class CachedSite:
    """What the robots.txt cache keeps of one origin; only the cache writes it
    (:class:`~robotgate.politeness.robots_cache.RobotsCache`), others read it.

    ``site`` is the origin's rules as last fetched, replaced whole by the next fetch;
    ``host`` the HostState that counts its server's visits (the scheduler's: read
    for the recheck after N visits); ``key`` its server's politeness key, once
    known; ``used`` the recently-used bit of the cache's CLOCK eviction.
    """

    __slots__ = ("host", "key", "site", "used")

    def __init__(self, site: SiteRules, host: HostState) -> None:
        self.site = site
        self.host = host
        self.key: str | None = None
        self.used = False  # CLOCK: only a site asked about again is spared

    def usable(self, now: float, recheck_visits: int | None) -> bool:
        """Whether the rules are fresh at ``now`` and the server has not had the
        ``recheck_visits`` visits after which robots.txt is fetched again."""
        return self.site.fresh_until > now and (
            recheck_visits is None or self.host.visits_since_check < recheck_visits)


class ParsedBodies:
    """The rules of the robots.txt bodies read last, by their bytes: the sites that
    serve the same file (a CMS's default, a hosting platform's) share one parse
    and one set of rules, compiled once.

    Only dialects whose rules do not depend on the file's URL share
    (``RobotsTxt.ORIGIN_FREE``).  At most ``max_entries`` bodies of at most
    ``max_body`` bytes are kept, the least recently read going first.

    >>> from robotgate.records import Outcome
    >>> bodies = ParsedBodies()
    >>> how = Interpretation("MyBot/1.0")
    >>> def entry(origin: str) -> RobotsEntry:
    ...     return RobotsEntry(origin, Outcome.OK, 0.0, 60.0, 200, b"Disallow: /x")
    >>> bodies.parse(entry("http://a.example"), how) is bodies.parse(entry("http://b.example"), how)
    True
    """

    __slots__ = ("_parsed", "max_body", "max_entries")

    def __init__(self, max_entries: int = 256, max_body: int = 16 * 1024) -> None:
        self.max_entries = max_entries
        self.max_body = max_body
        self._parsed: dict[tuple[bytes, str | None], tuple[RobotsTxt, Decision | None, float]] = {}

    def parse(self, entry: RobotsEntry, how: Interpretation) -> RobotsTxt:
        """The rules of a 2xx ``entry`` read as ``how`` says (one reader per instance)."""
        return self.read(entry, how)[0]

    def read(self, entry: RobotsEntry, how: Interpretation
             ) -> tuple[RobotsTxt, Decision | None, float]:
        """As :meth:`parse`, with what the rules mean for pacing (see :func:`paced`),
        worked out once for the sites that share them."""
        body = entry.body or b""
        kept = len(body) <= self.max_body and self.max_entries > 0
        key = (body, entry.content_type)  # the charset decides how the bytes read
        parsed = self._parsed.pop(key, None) if kept else None
        if parsed is None:
            rules = parse_entry(entry, how)
            parsed = (rules, *paced(rules, how, None))
            if not (kept and rules.ORIGIN_FREE):
                return parsed
            if len(self._parsed) >= self.max_entries:
                del self._parsed[next(iter(self._parsed))]
        self._parsed[key] = parsed  # last: the most recently read
        return parsed

    def __len__(self) -> int:
        return len(self._parsed)


def interpret(entry: RobotsEntry, how: Interpretation, rules: RobotsTxt | None = None,
              bodies: ParsedBodies | None = None) -> SiteRules:
    """Parse ``entry`` (unless ``rules`` stand in for it) into :class:`SiteRules`;
    through ``bodies`` when given, so that sites serving the same bytes share rules."""
    verdict = outcome_decision(entry)
    if verdict is None and rules is None and bodies is not None:
        rules, verdict, interval = bodies.read(entry, how)
    else:
        if verdict is None and rules is None:
            rules = parse_entry(entry, how)
        verdict, interval = paced(rules, how, verdict)
    # A small body costs less kept than a copy of the entry without it.
    body = entry.body
    kept = entry if body is None or len(body) <= SMALL_BODY else entry.copy(body=None)
    return SiteRules(kept, rules, verdict, interval)


def paced(rules: RobotsTxt | None, how: Interpretation, verdict: Decision | None
          ) -> tuple[Decision | None, float]:
    """The site's verdict (``verdict``, or a skip for too long a delay asked) and its
    pacing interval, by what ``rules`` ask of ``how.agent``."""
    pacing = how.pacing
    asked = pacing.asked(rules, how.agent)
    too_long = pacing.too_long(asked)
    if too_long is not None and verdict is None:
        verdict = Decision(False, f"{too_long}: the origin is skipped", outcome=SKIPPED)
    return verdict, pacing.delay if too_long is not None else pacing.interval_for(asked)


def parse_entry(entry: RobotsEntry, how: Interpretation) -> RobotsTxt:
    """The rules of a 2xx entry, decoded by its declared charset, kept for ``how.agent``
    (the other agents' groups left out: :meth:`RobotsTxt.kept_for`)."""
    max_bytes = how.fetch.max_bytes
    text = decode_body(entry.body or b"", entry.content_type, max_bytes,
                       invalid_bytes_of(how.dialect))
    if how.lwp_conventions:
        from ..robots.classic import classic_body_usable

        if not classic_body_usable(entry.content_type, text):
            text = ""
    return RobotsTxt.parse(text, dialect=how.dialect, max_bytes=max_bytes,
                           url=robots_url(entry.origin)).kept_for(how.agent)
