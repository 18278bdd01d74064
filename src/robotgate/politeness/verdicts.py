"""robots.txt's answer for a URL: from the cache without I/O when it holds the origin.

:class:`Verdicts` owns the one piece of state the verdict adds to the robots.txt
cache: which origin a URL's "scheme://authority", as spelt, belongs to (so that a
cached page is judged with one look-up), and the count of refusals.  It never
touches a server's state (:mod:`.servers` does).
"""

from __future__ import annotations

import time

from ..decision import Decision
from ..errors import Disallowed, GateClosed
from ..events import UrlSkipped
from ..policy.hops import Address
from ..policy.site import CachedSite, SiteRules
from ..redaction import logger
from ..urls import as_sent, match_prefix, remove_dot_segments, split_origin, text_url
from .emitter import Emitter
from .fleet_slots import FleetSlots
from .grouping import PaceKeys
from .robots_cache import CacheClosed, RobotsCache

__all__ = ["Verdicts"]

log = logger("robotgate.pacing")


class Verdicts:
    """robots.txt's verdicts for one robot (``agent``), read from ``cache``."""

    def __init__(self, cache: RobotsCache, keys: PaceKeys, agent: str,
                 fleet: FleetSlots | None = None, events: Emitter | None = None) -> None:
        self.cache = cache
        self.keys = keys
        self.agent = agent
        #: A fleet's slots: cached rules are trusted only once the fleet settled them.
        self.fleet = fleet
        #: How many requests robots.txt refused.
        self.disallowed = 0
        #: Who hears the refusals (None: nobody listens, and no event is built).
        self.events = events
        # "scheme://authority" as a URL spells it -> its origin (see learn): a pure
        # function remembered, never stale, so that a cached page is not split.
        self._origins: dict[str, str] = {}
        self._origins_max = 2 * cache.max_origins
        self._records = cache.records
        self._recheck_visits = cache.recheck_visits

    async def site(self, origin: str, via: object = None) -> SiteRules:
        """The origin's rules (fetching robots.txt once if needed, by the route ``via``)."""
        return self.cache.cached(origin) or await self.fetched(origin, via=via)

    async def fetched(self, origin: str, guard: bool = False,
                      checked: tuple[Address, ...] = (), via: object = None) -> SiteRules:
        """The origin's rules as the cache has them after its fetch (if one is due);
        ``guard``: the asker came through a public page's pointer (see
        :meth:`RobotsCache.fetched <robotgate.politeness.robots_cache.RobotsCache.fetched>`)."""
        closed = ""
        try:
            site = await self.cache.fetched(origin, guard, checked, via)
        except CacheClosed as exc:
            closed = str(exc)
        else:
            if site is not None:
                return site
        raise GateClosed(closed)  # not within the except: the CacheClosed is no cause

    def refuse(self, url: str, path: str, site: SiteRules, key: str | None = None) -> Disallowed:
        """The refusal of ``url`` (its ``path`` forbidden by ``site``), counted and told."""
        self.disallowed += 1
        decision = site.decide(path, self.agent)
        refused = Disallowed(url, decision)
        log.debug("skipped %s", refused)
        events = self.events
        if events is not None:
            origin = site.entry.origin
            events.emit(UrlSkipped(time.time(), origin, key or events.key_of(origin), url,
                                   decision.reason, decision.outcome or "rules",
                                   decision.error or ""))
        return refused

    def cached(self, url: str) -> tuple[CachedSite, str] | None:
        """The cache's record of ``url`` (as sent: see :func:`~robotgate.urls.as_sent`)'s
        origin and the path its rules judge, if cached, fresh and not due for a recheck.

        The origin of the URL's "scheme://authority" is found with one look-up (see
        :meth:`learn`); a URL of an authority not seen yet is split.
        """
        cut = url.find("/", 8)
        origin = self._origins.get(url[:cut] if cut > 0 else url)
        if origin is not None:
            # The cache's record read here, its freshness asked of the record itself:
            # no call into the cache but to set its recently-used bit.
            held = self._records.get(origin)
            if held is None or not held.usable(time.time(), self._recheck_visits):
                return None
            if not held.used:
                self.cache.touch(held)
            return held, _path_of(url, cut)
        origin, rest = split_origin(url)
        held = self.cache.fresh(origin)
        if held is None:
            return None
        self.learn(url, origin)
        return held, url if rest[:2] == "//" else rest

    def settled(self, url: str) -> tuple[CachedSite, str] | None:
        """As :meth:`cached`, for a request about to be sent: with a fleet, the cached
        rules count only once the fleet's robots.txt fetch lock settled them (or this
        worker leases the server in a shared crawl: no other worker asks it)."""
        fleet = self.fleet
        if fleet is None:
            return self.cached(url)
        if not fleet.leases:
            return None
        hit = self.cached(url)
        if hit is not None and not fleet.settled(
                hit[0].key or self.keys.cached(split_origin(url)[0])):
            return None
        return hit

    def check(self, url: object) -> Decision | None:
        """The verdict for ``url`` if its origin's rules are cached and fresh, else None:
        no I/O, no coroutine.  The gate's ``check`` is this very method:

        >>> d = gate.check(url) or await gate.decide(url)          # doctest: +SKIP
        """
        link = url if isinstance(url, str) else text_url(url)  # InvalidURL, not TypeError
        if "\t" in link or "\n" in link or "\r" in link:
            link = as_sent(link)  # judged as sent (yarl drops them)
        hit = self.cached(link)
        return hit[0].site.decide(hit[1], self.agent) if hit is not None else None

    def as_cached(self, url: str) -> Decision | None:
        """As :meth:`check`, but by the rules as cached even when due for a refresh
        (the rules a page just fetched was judged by); None if never fetched."""
        decision = self.check(url)
        if decision is not None:
            return decision
        url = as_sent(url)
        origin, rest = split_origin(url)
        site = self.cache.peek(origin)
        if site is None:
            return None
        return site.decide(url if rest[:2] == "//" else rest, self.agent)

    def learn(self, url: str, origin: str) -> None:
        """Remember that ``url``'s "scheme://authority", as spelt, is ``origin``."""
        m = match_prefix(url)
        if m is None or "@" in m[0]:
            return  # no password is kept
        origins = self._origins
        spelt = m[0]
        if origins.get(spelt) != origin:
            if len(origins) >= self._origins_max:
                origins.clear()  # rare and cheap: refilled by the next slow verdicts
            # Spelt as its origin (most URLs): one string for both, not two per origin.
            origins[origin if spelt == origin else spelt] = origin


def _path_of(url: str, cut: int) -> str:
    """What the rules judge of ``url`` whose authority ends at ``cut`` (-1: no path):
    the path as the client sends it, or the URL when its path starts with "//"."""
    if cut < 0:
        return ""
    rest = url[cut:]
    if "/." in rest or "/%2" in rest:
        rest = remove_dot_segments(rest)
    return url if rest[:2] == "//" else rest
