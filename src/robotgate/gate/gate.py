"""RobotGate: the facade crawl tasks share; it wires the politeness core to aiohttp.

It keeps three promises under load:

1. each origin's robots.txt is fetched once (per-origin single flight, then
   cached and revalidated as RFC 9309 says);
2. no disallowed URL is fetched, and every verdict explains itself;
3. no server is hit faster than its budget (delay, Crawl-delay, Retry-After,
   adaptive back-off, per-host and global caps).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import replace
from functools import cached_property, partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import aiohttp
from yarl import URL

from ..agents import product_token, robot_name
from ..crawl.results import CrawlSummary
from ..decision import Decision
from ..errors import Disallowed, GateClosed
from ..events import Event
from ..policy.fetch import FetchPolicy
from ..policy.hops import A_REDIRECT, IsPrivate, Resolve
from ..policy.hops import is_private as private_by_default
from ..policy.host_settings import HostSettings, HostTable
from ..policy.provenance import Provenance
from ..policy.site import Interpretation
from ..politeness.emitter import Emitter, Listener, listener_of
from ..politeness.exchange import Exchanged, Sender, exchange
from ..politeness.fleet_slots import FleetSlots
from ..politeness.grouping import PaceBy, PaceKeys
from ..politeness.questions import Questions, provenance_of
from ..politeness.request_turn import Requests, RequestTurn
from ..politeness.robots_cache import RobotsCache
from ..politeness.robots_fetcher import RobotsFetcher, RobotsTransport
from ..politeness.robots_pacing import RobotsPacing
from ..politeness.scheduler import Scheduler
from ..politeness.servers import Servers
from ..politeness.store_trouble import StoreTrouble
from ..politeness.tdmrep_cache import PointedOrigins
from ..politeness.verdicts import Verdicts
from ..politeness.waits import ServerWait
from ..records import HostState, RobotsEntry
from ..redaction import failure_text, logger
from ..robots import DIALECTS, RobotsTxt
from ..store.base import Store, crawl_store
from ..store.crawl_state import CrawlCounts
from ..store.leases import Leases
from ..store.memory import MemoryStore
from ..urls import InvalidURL, as_sent, split_origin, text_url
from .aiohttp_client import (
    MAX_BODY,
    AiohttpClient,
    AiohttpConnections,
    AiohttpRobotsTransport,
    FetchCall,
    check_slot,
    client_invalid_url,
    without_resends,
)
from .connections import bounded_connector, connection_budget, socket_wait_trace
from .describe import describe
from .options import Network, Pacing, pacing_of

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from Python 3.11

    from ..crawl import CrawlOptions
    from ..policy.tdm import TdmVerdict
    from ..politeness.sitemaps import SitemapReader, Sitemaps
    from ..politeness.tdmrep_cache import TdmRepCache
    from ..robots.directives import PageDirectives
    from ..robots.sitemap import SitemapEntry

__all__ = ["Disallowed", "GateClosed", "RobotGate"]

log = logger("robotgate")

Middleware = Callable[[aiohttp.ClientRequest, Any], Awaitable[aiohttp.ClientResponse]]
#: ``handler(url, response)`` of :meth:`RobotGate.crawl`: may return new URLs (or ``Handled``).
CrawlHandler = Callable[[str, aiohttp.ClientResponse], Awaitable[Any]]


#: What a client's send returns (its response), in :meth:`RobotGate.exchange`.
R = TypeVar("R")


def _check(user_agent: str, cap: int | None, max_concurrency: int | None) -> int:
    """Validate the gate's arguments (the pacing's are :class:`Pacing`'s); returns the
    per-server cap."""
    if not user_agent or not user_agent.strip():
        raise ValueError("user_agent must name the robot, e.g. 'MyBot/1.0'")
    cap = 1 if cap is None else cap
    if cap < 1:
        raise ValueError("max_per_host must be at least 1")
    if max_concurrency is not None and max_concurrency < 1:
        raise ValueError("max_concurrency must be at least 1 (or None)")
    return cap


def _check_options(network: object) -> None:
    """A dict or another object in place of an options object fails here, by name
    (``pacing``'s in :func:`pacing_of`)."""
    if not isinstance(network, Network):
        raise TypeError(f"network must be a robotgate.Network, not {type(network).__name__}")


def robots_agent_of(user_agent: str, robots_agent: str | None = None) -> str:
    """The name robots.txt groups are matched against: ``robots_agent`` if given, else
    the robot named in ``user_agent`` (:func:`robotgate.agents.robot_name`).  A browser's
    User-Agent that names no robot is kept, with a warning: '*' is all it matches."""
    if robots_agent is not None:
        if not product_token(robots_agent):
            raise ValueError(f"robots_agent {robots_agent!r} has no product token for "
                             "robots.txt groups to name: start it with letters, e.g. 'MyBot'")
        return robots_agent
    named = robot_name(user_agent)
    if named is None:
        log.warning("the User-Agent %r names a browser, not a robot: robots.txt groups "
                    "for the robot will not apply; name it with robots_agent='MyBot', or "
                    "in the User-Agent as 'Mozilla/5.0 (compatible; MyBot/1.0; +URL)'",
                    user_agent)
        return user_agent
    return named


class RobotGate:
    """A polite gate in front of a crawler.

    >>> async def crawl(urls):                                   # doctest: +SKIP
    ...     async with RobotGate("MyBot/1.0 (+https://example.com/bot)",
    ...                          from_="ops@example.com", delay=1.0) as gate:
    ...         for url in urls:
    ...             try:
    ...                 async with gate.fetch(url) as resp:
    ...                     print(url, resp.status, len(await resp.read()))
    ...             except Disallowed as no:
    ...                 print(url, "skipped:", no.decision)

    robots.txt groups are matched against the robot's name: the User-Agent's
    product token, or the robot in a browser-style comment
    (``"Mozilla/5.0 (compatible; MyBot/1.0; +URL)"`` is ``MyBot``);
    ``robots_agent="MyBot"`` names it outright.

    ``delay`` is the least interval (seconds) between two requests to one
    server, raised to robots.txt's ``Crawl-delay``/``Request-rate``.  An ask
    above ``max_crawl_delay`` skips the origin, or is kept in full with
    ``pacing=Pacing(on_long_delay="honour")``; it is never quietly shortened.  ``pace_by``
    says what one server is: ``"host"`` (default), ``"origin"``, ``"domain"``
    or ``"ip"``.  ``max_per_host`` caps requests in flight per server and
    ``max_concurrency`` across all.

    The gate owns its ``aiohttp.ClientSession`` unless ``session`` is given
    (then it is not closed).  ``store`` keeps robots.txt entries and host
    state (memory by default; :class:`~robotgate.SQLiteStore` on disk,
    :class:`~robotgate.RedisStore` for a fleet); the gate closes it on
    :meth:`close`.  A redirect from a public site into a loopback, private or
    link-local address is refused (unless ``network=Network(allow_private_redirects=True)``);
    ``is_private`` (an ``ipaddress`` address -> bool) says which addresses are
    private (default :func:`robotgate.policy.hops.is_private`).

    How each server is paced is one object, ``pacing=`` :class:`~robotgate.Pacing`
    (delay, Crawl-delay handling, back-off); ``delay=``, ``max_crawl_delay=`` and
    ``latency_factor=`` are shorthands for its fields (a Pacing that sets the same field
    to another value is a :class:`ValueError`).  The rarer settings come grouped too:
    ``network=`` :class:`~robotgate.Network` (private redirects,
    robots.txt transport, table bounds) and ``policy=`` :class:`~robotgate.FetchPolicy`
    (robots.txt's fetch, freshness and recheck).

    ``hosts`` maps a host, ``*.domain`` or politeness key to its own
    :class:`~robotgate.HostSettings` (delay, cap); robots.txt's longer asks still
    win.  ``on_event`` (a plain function) hears each :mod:`robotgate.events` event;
    ``metrics`` reports them through OpenTelemetry (see ``docs/operators.md``).

    :param user_agent: the User-Agent header sent with every request; name the robot and a
        URL that explains it, ``"MyBot/1.0 (+https://example.com/bot)"``.
    :param robots_agent: the name robots.txt groups are matched against (default: the
        robot named in ``user_agent``).
    :param from\\_: the From header (an e-mail address a webmaster can reach); none by default.
    :param delay: the least interval, in seconds, between two requests to one server
        (default 1.0); robots.txt's longer ``Crawl-delay`` or ``Request-rate`` wins.
        Shorthand for ``Pacing(delay=...)``.
    :param max_per_host: requests in flight per server (default 1).
    :param max_concurrency: requests in flight across all servers (default: no cap).
    :param session: an ``aiohttp.ClientSession`` to send through; the gate then does not
        close it (default: the gate makes and closes its own).
    :param store: where robots.txt entries and server states are kept (default: a
        :class:`~robotgate.MemoryStore`); the gate closes it.
    :param policy: how robots.txt is fetched, kept fresh and rechecked
        (:class:`~robotgate.FetchPolicy`).
    :param dialect: how robots.txt is read: ``"rfc9309"`` (default) or ``"classic"`` (the
        1994 rules as Perl's LWP applies them).
    :param max_crawl_delay: the longest ``Crawl-delay`` (seconds) the gate keeps; a site
        asking more is skipped, unless ``pacing=Pacing(on_long_delay="honour")`` (default 60).
        Shorthand for ``Pacing(max_crawl_delay=...)``.
    :param pace_by: what one server is: ``"host"`` (default), ``"origin"``, ``"domain"``
        (the registrable domain) or ``"ip"`` (the address a host resolves to).
    :param latency_factor: keep each server's interval at least this many times its
        recent response time (default: off).  Shorthand for ``Pacing(latency_factor=...)``.
    :param pacing: how each server is paced: delay, Crawl-delay handling, back-off and the
        margin (:class:`~robotgate.Pacing`); the shorthands above apply to it.
    :param network: private redirects, the robots.txt transport and table bounds
        (:class:`~robotgate.Network`).
    :param is_private: which addresses a public site's redirect may not lead to (an
        ``ipaddress`` address -> bool; default :func:`robotgate.policy.hops.is_private`).
    :param tdmrep: also fetch each origin's ``/.well-known/tdmrep.json`` (W3C TDMRep) and
        say whether text-and-data-mining rights are reserved (default off).
    :param hosts: per-server settings, by host name, ``*.domain`` or politeness key
        (:class:`~robotgate.HostSettings`); robots.txt's longer asks still win.
    :param on_event: a plain function called with each :mod:`robotgate.events` event.
    :param metrics: OpenTelemetry metrics: ``True`` (default) reports through the global
        meter provider once one is set up, a ``MeterProvider`` through that one,
        :class:`~robotgate.metrics.MetricsOptions` adds ``server.address``, ``False`` none.
    """

    def __init__(
        self,
        user_agent: str,
        *,
        robots_agent: str | None = None,
        from_: str | None = None,
        delay: float | None = None,
        max_per_host: int | None = None,
        max_concurrency: int | None = None,
        session: aiohttp.ClientSession | None = None,
        store: Store | None = None,
        policy: FetchPolicy | None = None,
        dialect: str = "rfc9309",
        max_crawl_delay: float | None = None,
        pace_by: PaceBy = "host",
        latency_factor: float | None = None,
        pacing: Pacing | None = None,
        network: Network | None = None,
        is_private: IsPrivate | None = None,
        tdmrep: bool = False,
        hosts: Mapping[str, HostSettings] | None = None,
        on_event: Callable[[Event], object] | None = None,
        metrics: object = True,
    ) -> None:
        cap = _check(user_agent, max_per_host, max_concurrency)
        #: The pacing in force: ``pacing`` with the shorthands ``delay``,
        #: ``max_crawl_delay`` and ``latency_factor`` applied (:func:`pacing_of`).
        self.pacing: Pacing = pacing_of(pacing, delay=delay, max_crawl_delay=max_crawl_delay,
                                        latency_factor=latency_factor)
        self.user_agent = user_agent
        #: The name robots.txt groups are matched against (see :func:`robots_agent_of`).
        self.robots_agent = robots_agent_of(user_agent, robots_agent)
        self.from_ = from_
        self.delay = self.pacing.delay
        self.max_per_host = cap
        self.max_concurrency = max_concurrency
        if dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {DIALECTS}, not {dialect!r}")
        self.dialect = dialect
        #: LWP::RobotUA's conventions (``dialect="classic"``): a robots.txt that is not
        #: text, or has no Disallow line, counts as empty; with them, the 1996 draft's rule
        #: that 401/403 keep out of the whole site (LWP itself read those as empty).
        self.lwp_conventions = dialect == "classic"
        if policy is None:
            policy = FetchPolicy(forbidden_disallows_all=self.lwp_conventions)
        self.policy = policy
        network = Network() if network is None else network
        _check_options(network)
        self.max_origins = network.max_origins
        self.pace_by = pace_by
        self.store: Store = store if store is not None else MemoryStore(network.max_origins)
        self._headers = {"User-Agent": user_agent, **({"From": from_} if from_ else {})}
        self._session = session
        self._closed = False
        self._closing: asyncio.Future[None] | None = None
        self._sitemaps: SitemapReader | None = None  # made on first use
        #: Why :meth:`close` could not save everything to the store (None: it did).
        self.close_error: str | None = None
        #: Which addresses a public site's redirect may not lead to.
        self.is_private: IsPrivate = is_private if is_private is not None else private_by_default
        #: The per-host settings (``hosts``).
        self.hosts = HostTable(hosts or {})
        #: TDMRep (opt-in): each origin's /.well-known/tdmrep.json, fetched by robots.txt's rules.
        self.tdmrep = tdmrep
        self._crawls: set[_Running] = set()  # running crawls, ended by close()
        self._wire(cap, max_concurrency, network, on_event, metrics)

    def _wire(self, cap: int, max_concurrency: int | None, network: Network,
              on_event: Callable[[Event], object] | None, metrics: object) -> None:
        """Build the parts, each after those it needs, and hand each what it needs as it
        is made: each owns its piece of state."""
        max_origins = network.max_origins
        refuse_private = not network.allow_private_redirects
        store, policy = self.store, self.policy
        #: How requests connect: the session, the headers, the private-network rule.
        self._connections = connections = AiohttpConnections(
            self._ensure_session, self._headers, owned=self._session is None,
            refuse_private=refuse_private, is_private=self.is_private)
        self._keys = keys = PaceKeys(
            self.pace_by, max_entries=max_origins,
            resolve=connections.first_address if self.pace_by == "ip" else None)
        #: The sockets the gate's own session may hold open (see :mod:`.connections`).
        self._max_connections = budget = connection_budget(network.max_connections)
        # Requests in flight wait for a connection before their server's turn, not
        # after (a caller's session keeps its own connector's limits).
        in_flight = (max_concurrency if self._session is not None
                     else min(max_concurrency or budget, budget))
        self._scheduler = scheduler = Scheduler(
            self.pacing, max_per_group=cap, max_concurrency=in_flight,
            max_groups=max_origins)
        #: Who hears the events (None: nobody listens, and no event is built).
        self._events = events = _emitter(on_event, metrics, self, keys)
        trouble = StoreTrouble(store, events)
        # What the store can do besides, asked once: each part goes to who uses it.
        shared, at_once = store.fleet(), store.at_once()
        slots = shared.slots() if shared is not None else None
        #: The named crawls the store keeps (None: it keeps none).
        self._named_crawls = store.crawls()
        # The servers this worker leases in a crawl shared through the store: paced here.
        self._leases = Leases() if slots is not None else None
        fleet = FleetSlots(slots, leases=self._leases) if slots is not None else None
        transport = network.robots_transport or AiohttpRobotsTransport(connections)
        # An origin a public page's pointer led to: its tdmrep.json is guarded as its robots.txt.
        pointed = PointedOrigins(max_origins) if self.tdmrep else None
        self._fetcher = fetcher = RobotsFetcher(
            transport, policy, on_fetch=pointed.robots_fetched if pointed is not None else None)
        how = Interpretation(self.robots_agent, self.dialect, self.lwp_conventions, policy,
                             self.pacing)
        table = self.hosts
        host_setting = ((lambda origin: table.match(origin, keys.cached(origin)))
                        if table else None)

        def robots_cache(servers: Servers) -> RobotsCache:
            """robots.txt's cache, its fetches paced and counted as requests to ``servers``."""
            return RobotsCache(fetcher, store, how, fleet=shared, at_once=at_once,
                               max_origins=max_origins, recheck_visits=policy.recheck_visits,
                               host_state=servers.host_state,
                               paced_by=partial(RobotsPacing, servers), events=events,
                               host_setting=host_setting, trouble=trouble)

        #: Every server's state, and robots.txt's cache.
        self._servers = servers = Servers(keys, scheduler, store, fleet, robots=robots_cache,
                                          shared=shared, at_once=at_once,
                                          hosts=table or None, events=events)
        self._cache = servers.cache
        #: robots.txt's verdicts.
        self._verdicts = verdicts = Verdicts(self._cache, keys, self.robots_agent, fleet,
                                             events=events)
        #: What a request's turn shares.
        self._requests = requests = Requests(verdicts, servers, headers=self._headers,
                                             refuse_private=refuse_private,
                                             private=self.is_private, events=events)
        self._client = AiohttpClient(connections, requests)
        # The memory store would only hold a second copy (and crowd robots.txt out).
        tdm_store = store if at_once is None else None
        self._tdm_cache = (_tdm_cache(policy, transport, servers, max_origins, tdm_store,
                                      trouble, pointed)
                           if pointed is not None else None)
        #: The gate's own questions: allowed, decide, tdm.
        self._questions = Questions(verdicts, connections.addresses, self.is_private,
                                    refuse_private=refuse_private, tdm=self._tdm_cache)

    # -- for client adapters ---------------------------------------------------

    @property
    def robots_transport(self) -> RobotsTransport:
        """What robots.txt is fetched through now (the gate's session unless
        :meth:`set_robots_transport` or ``Network(robots_transport=...)`` gave another):
        wrap it and set the wrapper to watch every robots.txt request."""
        return self._fetcher.transport

    def set_robots_transport(self, transport: RobotsTransport) -> None:
        """Fetch robots.txt through ``transport`` (an adapter's client) from now on."""
        self._fetcher.transport = transport
        if self._tdm_cache is not None:
            self._tdm_cache.fetcher.transport = transport

    def set_address_resolver(self, resolve: Callable[[str], Awaitable[str]]) -> None:
        """With ``pace_by="ip"``: look up a host's address with ``resolve`` (an
        adapter's client's) from now on, not with the gate's aiohttp resolver."""
        self._keys.set_resolver(resolve)

    def request_turn(self, url: str, provenance: Provenance | str | None,
                     resolve: Resolve | None = None, *, paced: bool = True,
                     what: str = A_REDIRECT) -> RequestTurn:
        """The turn of one request to ``url``, as the client sends it: what a client
        adapter drives for every request (see :mod:`robotgate.politeness.request_turn`).

        ``provenance``: who pointed at the request (a text: the URL whose redirect it
        follows, None: the caller's input, as ``pointed_by`` takes them); a pointer's
        target is looked up with ``resolve``, the client's own resolver, and ``what``
        names it in a refusal.  ``paced`` False: a browser's subresource, judged and
        capped but not held to the interval.  An adapter that can, sends through
        :meth:`exchange` instead, which makes the turns.
        """
        return self._requests.turn(url, provenance_of(provenance), resolve, paced, what)

    def exchange(self, sender: Sender[R], url: str, provenance: Provenance, *,
                 resolve: Resolve | None = None, follow: bool = True,
                 max_redirects: int = 10, paced: bool = True,
                 via: object = None) -> Awaitable[Exchanged[R]]:
        """Send ``url``, a request of ``provenance``, through a client adapter's
        ``sender``, redirects followed hop by hop, each in its own turn: the seam every
        adapter plugs into (:mod:`robotgate.politeness.exchange`; docs/integrations.md,
        "A new client").  ``via``: the route the requests take (a proxy, in the adapter's
        terms), which robots.txt is asked by too."""
        return exchange(self._requests, sender, url, provenance, resolve=resolve,
                        follow=follow, max_redirects=max_redirects, paced=paced, via=via)

    # -- lifecycle -----------------------------------------------------------

    async def __aenter__(self) -> RobotGate:
        await self.open()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    async def open(self) -> None:
        """Open the store; ``async with`` does this."""
        if self._closed:
            raise GateClosed("the gate is closed")
        await self.store.open()

    def _ensure_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise GateClosed("the gate is closed")
        if self._session is None:
            resolver = aiohttp.DefaultResolver()
            self._connections.resolver = resolver
            connector = bounded_connector(self._max_connections, resolver)
            # A robots.txt request's timeout stops while it waits for a free socket.
            trace = socket_wait_trace()
            # The last look at each request's permit (its fleet slot, or its interval
            # from the server's last request) as its headers go out.
            trace.on_request_headers_sent.append(check_slot)
            self._session = without_resends(aiohttp.ClientSession(
                headers=self._headers, connector=connector, trace_configs=[trace]))
        return self._session

    async def close(self) -> None:
        """End everything the gate started: robots.txt fetches, responses being
        read (their readers get :class:`GateClosed`), an owned session, the store.
        Another call waits for the first; one cancelled part-way still ends it all."""
        if self._closing is None or self._closing.cancelled():  # cut short: again
            self._closed = True
            self._questions.close()
            self._closing = asyncio.ensure_future(_shut(self))
        await _wait_for(self._closing)

    @property
    def headers(self) -> dict[str, str]:
        """The headers the gate sends on every request (User-Agent, From)."""
        return dict(self._headers)

    @property
    def refuse_private(self) -> bool:
        """Whether redirects from public sites into private addresses are refused."""
        return self._client.refuse_private

    @property
    def session(self) -> aiohttp.ClientSession:
        """The session requests go through (created on first use if the gate owns it)."""
        return self._ensure_session()

    @property
    def stats(self) -> dict[str, int]:
        """Counters: robots.txt requests, pages, disallowed, back-offs, late fleet slots,
        store errors (a failed save on :meth:`close` too: see ``close_error``), and
        tdmrep.json requests (``tdmrep=True``)."""
        scheduler, fleet = self._scheduler, self._servers.fleet
        return {"robots_requests": self._fetcher.requests, "pages": scheduler.pages,
                "disallowed": self._verdicts.disallowed, "backoffs": scheduler.backoffs,
                "late_slots": fleet.late if fleet is not None else 0,
                "store_errors": self._cache.store_errors + (self.close_error is not None),
                "tdmrep_requests": (self._tdm_cache.requests
                                    if self._tdm_cache is not None else 0),
                "event_errors": self._events.errors if self._events is not None else 0}

    @property
    def paced_servers(self) -> int:
        """How many servers (politeness groups) the gate paces now."""
        return len(self._scheduler)

    # -- questions -----------------------------------------------------------

    @cached_property
    def check(self) -> Callable[[object], Decision | None]:
        """``check(url)``: the verdict for ``url`` if its origin's robots.txt is cached and
        fresh, else None.

        No I/O and no coroutine: the fast path of a crawler that asks often.  It is the
        verdicts' own method (:meth:`robotgate.politeness.verdicts.Verdicts.check`),
        reached with no call of the gate's.

        >>> d = gate.check(url) or await gate.decide(url)          # doctest: +SKIP
        """
        return self._verdicts.check

    @cached_property
    def allowed(self) -> _Allowed:
        """``await allowed(url, pointed_by=None, via=None)``: may the robot fetch ``url``?  Fetches
        robots.txt once per origin if needed.

        ``pointed_by``: the page whose pointer ``url`` is, as :meth:`fetch` takes it
        (``""``: a page known to be public; or its
        :class:`~robotgate.policy.provenance.Provenance`).  Then a pointer the private-network rule
        refuses is not allowed, and a robots.txt request this call makes is that
        pointer's, held to the rule where it connects (docs/bad-input.md).

        ``via``: the route the request for ``url`` will take, which a robots.txt request
        this call makes takes too, as :meth:`exchange` takes it: a ``gate.fetch`` call's
        own (:attr:`FetchCall.via <robotgate.gate.aiohttp_fetch.FetchCall.via>`: its
        proxy), or a :class:`~robotgate.gate.aiohttp_robots.Route`; None: the gate's
        session and its proxy, if any.  One robots.txt request per origin: by the route
        of the asker that starts it (see docs/crawl.md, "A proxy").

        It is :meth:`robotgate.politeness.questions.Questions.allowed`, reached with no
        call of the gate's.
        """
        return self._questions.allowed

    def decide(self, url: str, *, pointed_by: Provenance | str | None = None,
               via: object = None) -> Coroutine[Any, Any, Decision]:
        """The verdict for ``url`` with its reason: the rule and line, or the fetch outcome;
        ``pointed_by`` and ``via`` as :meth:`allowed` takes them (a refused pointer: the
        refusal).

        >>> str(await gate.decide("https://down.example/x"))     # doctest: +SKIP
        'robots.txt answered 503: robots.txt is unreachable, so the site counts as ...'
        """
        return self._questions.decide(url, pointed_by, via)

    async def rules(self, url: str) -> RobotsTxt | None:
        """The parsed robots.txt of ``url``'s origin (``None`` when the fetch outcome decides),
        as the gate keeps it: only the groups its agent reads (its own, and ``*``; see
        ``RobotsTxt.kept_for``).  Asked for an agent whose group was left out, it raises
        ``AgentLeftOut``: parse ``(await gate.robots_entry(url)).body`` to ask for others."""
        return (await self._verdicts.site(split_origin(url)[0])).rules

    def cached_rules(self, url: str) -> tuple[RobotsTxt, float] | None:
        """The parsed robots.txt of ``url``'s origin as cached (kept for the gate's agent, as
        :meth:`rules` says), fresh or not, and when it was fetched; no I/O (None: none
        read, or the fetch outcome decides)."""
        site = self._cache.peek(split_origin(url)[0])
        if site is None or site.rules is None:
            return None
        return site.rules, site.entry.fetched_at

    async def robots_entry(self, url: str) -> RobotsEntry:
        """What is known of the origin's robots.txt fetch: status, freshness, failures,
        and the body as fetched (from the store)."""
        origin, _ = split_origin(url)
        site = await self._verdicts.site(origin)
        stored = await self.store.load_robots(origin) if not self._closed else None
        if stored is not None and stored.fetched_at == site.entry.fetched_at:
            return stored
        return site.entry

    def pace_key(self, url: str) -> str:
        """The politeness key of ``url``: requests with the same key share one budget.

        >>> RobotGate("Bot/1").pace_key("https://example.com/x")          # doctest: +SKIP
        'host:example.com'
        """
        origin = split_origin(url)[0]
        return self._keys.cached(origin) or origin

    def host_wait(self, url: str) -> float:
        """Seconds until the next request to ``url``'s server may start (0 if now)."""
        return self._servers.host_wait(split_origin(url)[0])

    def server_wait(self, url: str) -> ServerWait:
        """Seconds until ``url``'s server may be asked, why it must wait (see
        :mod:`robotgate.politeness.waits`), and the interval it is owed."""
        return ServerWait(*self._servers.server_wait(split_origin(url)[0]))

    def host_state(self, url: str) -> HostState | None:
        """Visits, last visit and next allowed time of ``url``'s server, if known."""
        return self._servers.known_host(split_origin(url)[0])

    def usage(self, url: str, headers: Mapping[str, str] | None = None) -> dict[str, bool]:
        """What the site lets its content be used for (IETF AIPREF), robots.txt and the
        response's ``Content-Usage`` header combined; needs the origin cached (fresh or not)."""
        from ..robots.usage import combine_usage, usage_from_headers

        decision = self._verdicts.as_cached(as_sent(url))  # a URL that is no str: InvalidURL
        found = [dict(decision.usage)] if decision is not None else []
        if headers is not None:
            found.append(usage_from_headers(headers))
        return combine_usage(*found)

    def directives(self, response: Any, body: bytes | None = None) -> PageDirectives:
        """The page's directives for this robot: ``X-Robots-Tag`` and TDMRep headers and,
        for HTML, the robots and TDMRep meta tags of ``body`` (default: the body the
        response has already read, as ``gate.fetch`` does; none if it has not).

        They govern following and use, never fetching: that is robots.txt's alone.

        >>> async with gate.fetch(url) as resp:                     # doctest: +SKIP
        ...     follow = not gate.directives(resp).nofollow
        """
        from .directives import directives_of

        return directives_of(response, self.robots_agent, body)

    def tdm(self, url: str, page: PageDirectives | None = None, *,
            pointed_by: Provenance | str | None = None,
            via: object = None) -> Coroutine[Any, Any, TdmVerdict]:
        """Whether text-and-data-mining rights are reserved for ``url`` (W3C TDMRep):
        the origin's tdmrep.json (with ``tdmrep=True``; fetched once per origin),
        then ``page``'s headers and meta tags (:meth:`directives`).

        ``pointed_by`` as :meth:`allowed` takes it: a tdmrep.json request this call
        makes is that pointer's, held to the private-network rule where it connects;
        ``via``: the route it takes, as :meth:`allowed` takes it.
        """
        return self._questions.tdm(url, page, pointed_by, via)

    def describe(self) -> str:
        """A readable account of the gate's state, for debugging."""
        return describe(self, self._cache, self._scheduler, self._keys)

    # -- requests ------------------------------------------------------------

    def fetch(self, url: str | URL, *, method: str = "GET", stream: bool = False,
              max_bytes: int | None = MAX_BODY,
              pointed_by: Provenance | str | None = None, **kwargs: Any) -> FetchCall:
        """Fetch ``url`` (text, or a :class:`yarl.URL` as aiohttp takes) politely;
        raises :class:`Disallowed` if robots.txt forbids it (an
        :class:`~robotgate.gate.aiohttp_client.AiohttpDisallowed`, which is also an
        ``aiohttp.ClientError``).

        Returns the :class:`aiohttp.ClientResponse` with its body already read
        (the server's slot is held until then); usable as ``await`` or
        ``async with``.  Redirects are followed hop by hop, each checked and paced.
        Other keyword arguments go to aiohttp's request; the gate's ``User-Agent``
        and ``From`` replace any the session or the call sets (robots.txt was read
        for that agent).  With ``stream=True`` (``async with`` only) the body is
        left for the caller to read, and the slot is held until the block exits.
        Otherwise a body longer than ``max_bytes`` decoded (``None``: no limit)
        raises :class:`BodyTooLarge`.

        ``pointed_by`` is the URL of the page that pointed to ``url`` (a link, a
        sitemap; ``""``: a page known to be public), or its
        :class:`~robotgate.policy.provenance.Provenance` (a page stored as public or
        private is taken at its word, not looked up again): then ``url`` is a pointer,
        refused if it leads from a public site into a private address
        (docs/bad-input.md).  None (the default): ``url`` is your own input, never
        refused for its address.

        >>> async with gate.fetch(url, stream=True) as resp:          # doctest: +SKIP
        ...     first = await resp.content.read(65536)
        """
        if url.__class__ is not str:
            invalid = None
            try:
                url = str(url) if isinstance(url, URL) else text_url(url)  # a URL as it is sent
            except InvalidURL as bad:
                invalid = client_invalid_url(bad)  # raised out here: no context
            if invalid is not None:
                raise invalid
            assert isinstance(url, str)
        return FetchCall(self._client, url, method, kwargs, stream, max_bytes,
                         provenance_of(pointed_by))

    @property
    def middleware(self) -> Middleware:
        """An aiohttp client middleware: every request is checked and paced.

        >>> session = aiohttp.ClientSession(middlewares=[gate.middleware])  # doctest: +SKIP

        A forbidden URL raises :class:`Disallowed` from the request call (an
        :class:`~robotgate.gate.aiohttp_client.AiohttpDisallowed`, which is also an
        ``aiohttp.ClientError``).  The server's slot is held until the response
        headers arrive.  Each request is your own input (a redirect's hop: a pointer of
        the URL redirected); send a page's link with :meth:`middleware_for`.
        """
        return self._client.middleware

    def middleware_for(self, pointed_by: Provenance | str | None) -> Middleware:
        """:attr:`middleware` for one request that a page pointed to, given as the
        request's own middleware (it replaces the session's for that request):
        ``pointed_by`` as :meth:`fetch` takes it.

        >>> await session.get(link, middlewares=[gate.middleware_for(page)])  # doctest: +SKIP
        """
        return self._client.middleware_for(provenance_of(pointed_by))

    def sitemaps(self, url: str, *, max_depth: int = 2, max_sitemaps: int = 1000) -> Sitemaps:
        """The entries of the sitemaps of ``url``'s origin (those its robots.txt names,
        else ``/sitemap.xml``), as an async iterator; see ``docs/sitemaps.md``.

        Each sitemap is fetched as a page is (robots.txt checked, paced), once for all
        the iterators walking it at the time.  A sitemap that cannot be read raises
        nothing: the iterator's ``problems`` say why.

        >>> async for entry in gate.sitemaps("https://example.com/"):  # doctest: +SKIP
        ...     print(entry.url, entry.lastmod)
        """
        from .sitemaps import sitemap_reader

        origin = split_origin(as_sent(url))[0]  # InvalidURL for anything but http(s)
        if self._sitemaps is None:
            self._sitemaps = sitemap_reader(self.fetch, self.rules)
        return self._sitemaps.walk(origin, max_depth=max_depth, max_sitemaps=max_sitemaps)

    async def crawl(self, urls: Iterable[str | SitemapEntry] | AsyncIterable[str | SitemapEntry],
                    handler: CrawlHandler, *, concurrency: int = 16, name: str | None = None,
                    **options: Unpack[CrawlOptions]) -> CrawlSummary:
        """Crawl ``urls`` (or sitemap entries) with ``concurrency`` workers kept busy
        across servers (see :func:`robotgate.crawl.frontier.crawl` for the options:
        a misspelt one is a ``TypeError`` before any request); :meth:`close` ends it.
        A ``name`` keeps the crawl in the gate's store, where calling it again resumes
        it (see ``docs/crawl.md``)."""
        from ..crawl import Frontier, check_options

        check_options(dict(options))
        if name is not None:
            # NamedCrawlsUnsupported where the store keeps none.
            crawls = self._named_crawls or crawl_store(self.store)
            shared_crawls = crawls.shared()
            options["state"] = (
                shared_crawls.crawl_state(name, server=self.pace_key, leases=self._leases,
                                          max_servers=max(1, concurrency))
                if shared_crawls is not None else crawls.crawl_state(name))
        return await self._run_crawl(
            Frontier(self, urls, handler, concurrency=concurrency, **options))

    def report_skipped(self, url: str, decision: Decision) -> None:
        """Tell the gate's listeners (``on_event``, metrics) that a crawl skips ``url``
        for ``decision``: a :class:`~robotgate.events.UrlSkipped` event.  A crawl loop
        of your own that checks URLs itself reports its skips here, as ``gate.crawl`` does."""
        if self._events is not None:
            self._events.skipped(url, decision)

    def report_waited(self, url: str, seconds: float, reason: str) -> None:
        """Tell the gate's listeners that a crawl held ``url`` back ``seconds`` for its
        server's turn, for ``reason`` (:data:`robotgate.events.WAIT_REASONS`): a
        :class:`~robotgate.events.TurnWaited` event (none for no wait)."""
        if self._events is not None:
            self._events.waited(url, seconds, reason)

    async def _run_crawl(self, crawl: _Running) -> CrawlSummary:
        """Run ``crawl``; :meth:`close` ends it with :class:`GateClosed` (at once if
        the gate is closed already: the crawl would first wait for a server's turn)."""
        if self._closed:
            raise GateClosed("the gate is closed")
        self._crawls.add(crawl)
        try:
            return await crawl.run()
        finally:
            self._crawls.discard(crawl)

    async def crawl_status(self, name: str) -> CrawlCounts | None:
        """How many URLs of the named crawl are queued, in flight, done, skipped and
        failed (None: the store keeps no crawl of that name)."""
        crawls = self._named_crawls
        if crawls is None or name not in await crawls.crawl_names():
            return None
        return await crawls.crawl_state(name).counts()

    async def drop_crawl(self, name: str) -> bool:
        """Forget the named crawl; whether there was one."""
        crawls = self._named_crawls
        return crawls is not None and await crawls.drop_crawl(name)


def _emitter(on_event: Callable[[Event], object] | None, metrics: object, gate: RobotGate,
             keys: PaceKeys) -> Emitter | None:
    """Who hears ``gate``'s events: ``on_event``, and the metrics (see
    :func:`robotgate.metrics.metrics_listener`); None when nobody listens."""
    listeners: list[Listener] = [listener_of(on_event)] if on_event is not None else []
    if metrics is not False and metrics is not None:
        from ..metrics import metrics_listener

        recorder = metrics_listener(metrics, gate)
        if recorder is not None:
            listeners.append(recorder)
    return Emitter(listeners, keys.cached) if listeners else None


def _tdm_cache(policy: FetchPolicy, transport: RobotsTransport, servers: Servers,
               max_origins: int, store: Store | None, trouble: StoreTrouble,
               pointed: PointedOrigins) -> TdmRepCache:
    """tdmrep.json fetched as robots.txt is (same transport, turn, timeouts, redirects,
    freshness, back-off), but a file that does not come, for whatever reason, states
    nothing (W3C TDMRep, see policy/tdm.py): 401/403 included, whatever the robots.txt
    convention.  ``store``: where its entries are kept (None: in memory only)."""
    from ..policy.tdm import TDMREP_PATH
    from ..politeness.tdmrep_cache import TdmRepCache

    fetcher = RobotsFetcher(transport, replace(policy, forbidden_disallows_all=False),
                            TDMREP_PATH)
    return TdmRepCache(fetcher, paced_by=partial(RobotsPacing, servers),
                       max_origins=max_origins, store=store, trouble=trouble, pointed=pointed)


class _Allowed(Protocol):
    """:meth:`RobotGate.allowed` as it is called."""

    def __call__(self, url: str, *, pointed_by: Provenance | str | None = None,
                 via: object = None) -> Coroutine[Any, Any, bool]: ...


class _Running(Protocol):
    """A crawl as the gate runs it and :meth:`RobotGate.close` ends it."""

    async def run(self) -> CrawlSummary: ...

    def halt(self, failure: BaseException | None = None) -> None: ...


async def _wait_for(closing: asyncio.Future[None]) -> None:
    try:
        await asyncio.shield(closing)
    except asyncio.CancelledError:
        # No caller may be left to hear how it ends: an error is logged, not lost.
        closing.add_done_callback(_log_failure)
        raise


def _log_failure(closing: asyncio.Future[None]) -> None:
    if not closing.cancelled() and (exc := closing.exception()) is not None:
        log.error("closing the gate failed (%s: %s)", type(exc).__name__, exc, exc_info=exc)


async def _shut(gate: RobotGate) -> None:
    """close()'s work, in a task of its own: a caller cancelled meanwhile cuts nothing short."""
    gate._servers.close()  # no request starts: the waits for a turn end with GateClosed
    for crawl in list(gate._crawls):
        crawl.halt(GateClosed("the gate was closed during the crawl"))
    gate._client.close_responses()
    await gate._cache.close()
    if gate._tdm_cache is not None:
        await gate._tdm_cache.close()
    if gate._client.owned and gate._session is not None:
        await gate._session.close()
    try:
        await gate.store.close()
    except Exception as exc:
        # A full disk costs the last host states, not the crawl: said, not raised.
        gate.close_error = (f"the store could not save its last writes on close "
                            f"({failure_text(exc)})")
        log.warning("%s", gate.close_error)
