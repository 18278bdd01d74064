"""What ``gate.crawl`` reports: one :class:`CrawlResult` per URL, a :class:`CrawlSummary`.

Plain records, no I/O; :mod:`robotgate.crawl.frontier` fills them in.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from ..urls import InvalidURL, split_origin

if TYPE_CHECKING:
    from ..decision import Decision
    from ..policy.tdm import TdmVerdict
    from ..robots.directives import PageDirectives

__all__ = ["CrawlResult", "CrawlSummary", "Handled", "HostSummary", "final_url_of"]


def final_url_of(url: str, response: object) -> str:
    """The URL a page's answer came from, as :attr:`CrawlResult.final_url` returns it:
    ``url`` as given when the answer came from it (a client's response drops its user
    information and fragment), else where a redirect led: the last target as the server
    wrote it (``Location``, resolved against the URL it answered) when the client kept
    the hops in ``history``, else the response's ``url`` (a client drops a target's
    user information: the gate's own redirects are followed that way).
    """
    answered = str(getattr(response, "url", url))
    history = getattr(response, "history", None)
    if not history:  # none, or redirects the gate followed itself, hop by hop
        return url if _same_page(url, answered) else answered
    last = history[-1]
    location = getattr(last, "headers", {}).get("Location")
    if not isinstance(location, str) or not location:
        return answered
    return urljoin(str(getattr(last, "url", answered)), location)


def _same_page(given: str, answered: str) -> bool:
    """Whether ``answered`` is ``given`` without its user information and fragment."""
    parts = urlsplit(given)
    bare = parts._replace(netloc=parts.netloc.rpartition("@")[2], fragment="")
    return bare.geturl() == answered


@dataclass(frozen=True, slots=True)
class Handled:
    """What a handler may return instead of a bare iterable of links.

    ``links`` join the frontier; ``bytes`` and ``info`` are copied into the
    URL's :class:`CrawlResult` (e.g. the body size read, where it was saved).
    ``head`` is the start of the body a handler read from a streamed response,
    for the page's meta tags (a response read whole keeps its body itself).
    """

    links: Iterable[str] = ()
    bytes: int | None = None
    info: Mapping[str, Any] = field(default_factory=dict)
    head: builtins.bytes | None = None  # the field ``bytes`` hides the type here


@dataclass(slots=True)
class CrawlResult:
    """What happened to one URL; handed to ``on_result`` as each URL finishes.

    Exactly one of these holds: ``status`` is set (a response came, whatever
    its code), ``decision`` is set (robots.txt forbids the URL: skipped; or
    ``decision.unreachable``: its robots.txt could not be fetched, so it is not
    asked), or ``error`` is set (invalid URL, network error, timeout, handler
    error; a handler error after a response keeps ``status`` too).

    ``directives`` are the page's (``X-Robots-Tag``, robots meta tags, TDMRep's
    headers and tags), ``not_followed`` the links its ``nofollow`` kept out of
    the frontier (``directives.explain()`` says why), ``tdm`` whether TDM rights
    are reserved for it (a gate with ``tdmrep=True``).

    What the crawl returns keeps the caller's URLs whole (docs/secrets.md): ``url`` is
    the URL as given, ``final_url`` the URL as given or, after redirects, the last
    target as the server wrote it (:func:`final_url_of`; for a redirect robots.txt
    refused, that target), user information, query and fragment included.  ``error``
    and the decision's texts are said, and hold no secret.

    The story of its request: ``started`` and ``answered`` (Unix times: the
    request sent, its answer's headers come), ``waited`` (seconds it waited for
    its server's turn), ``wait_reason`` (why: see :mod:`robotgate.politeness.waits`) and
    ``interval`` (the seconds its server was owed between two requests then).

    ``retried``: this attempt's answer (a 429 or 503) or error (a connection
    error, a timeout) is transient and the URL is asked again (``attempts`` counts
    from 1): each attempt gets a record, only the last is the URL's outcome.

    ``local``: the ``error`` is this machine's, not the site's: it ran out of file
    descriptors, memory or ports (:class:`~robotgate.policy.fetch.LocalFailure`, which
    names the limit and what to raise).  The URL is asked again after a pause, not
    counted against ``retries``, and its robots.txt is not counted unreachable.
    """

    url: str
    key: str | None = None
    status: int | None = None
    final_url: str | None = None
    error: str | None = None
    decision: Decision | None = None
    bytes: int | None = None
    elapsed: float = 0.0
    usage: dict[str, bool] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    discovered: bool = False
    attempts: int = 1
    directives: PageDirectives | None = None
    not_followed: int = 0
    tdm: TdmVerdict | None = None
    started: float | None = None
    answered: float | None = None
    waited: float = 0.0
    wait_reason: str = ""
    interval: float | None = None
    interrupted: bool = False
    retried: bool = False
    local: bool = False

    @property
    def kind(self) -> str:
        """``"page"``, ``"skipped"``, ``"error"``, ``"invalid"`` (no key: not crawlable),
        ``"interrupted"`` (in flight when the crawl ended: not done) or ``"retried"``
        (an attempt whose URL is asked again: not its outcome)."""
        if self.interrupted:
            return "interrupted"
        if self.retried:
            return "retried"
        if self.key is None:
            return "invalid"
        if self.decision is not None:
            return "skipped"
        if self.error is not None:
            return "error"
        return "page"


@dataclass(slots=True)
class HostSummary:
    """One politeness key's tally of URLs (as :class:`CrawlSummary` counts them) and
    request starts."""

    pages: int = 0
    skipped: int = 0
    errors: int = 0
    failed: int = 0
    unreachable: int = 0
    starts: int = 0
    first_start: float | None = None
    last_start: float | None = None

    def mean_interval(self) -> float | None:
        """Mean seconds between two request starts (``None`` below two requests)."""
        if self.starts < 2 or self.first_start is None or self.last_start is None:
            return None
        return (self.last_start - self.first_start) / (self.starts - 1)

    def started_at(self, when: float) -> None:
        """Note a request start (loop time)."""
        if self.first_start is None:
            self.first_start = when
        self.last_start = when
        self.starts += 1

    def add(self, other: HostSummary) -> None:
        """Count ``other``'s URLs and request starts in this tally (its intervals are
        not: a sum of hosts has none)."""
        self.pages += other.pages
        self.skipped += other.skipped
        self.errors += other.errors
        self.failed += other.failed
        self.unreachable += other.unreachable
        self.starts += other.starts


@dataclass(slots=True)
class CrawlSummary:
    """What a crawl did.  Filled in live: pass one as ``summary=`` to watch it.

    Each URL done counts once, by its outcome (its last attempt): ``pages``
    answered below 400 (fetched), ``failed`` answered 400 or above (a 429 or 503
    that outlasted its retries too), ``skipped`` refused by robots.txt (a rule, or
    its fetch outcome: 401/403 under the classic convention, too long a
    Crawl-delay), ``unreachable`` not asked because the site's robots.txt could not
    be fetched (a dead host, a DNS failure, a 5xx: disallowed all the same, RFC 9309
    2.3.1.4), ``errors`` no answer (a network error, a timeout, a handler error),
    ``invalid`` no http(s) URL.  ``retried`` counts attempts, not URLs.

    ``read`` counts input URLs taken, ``queued``/``in_flight``/``hosts_queued``
    describe the frontier right now (``hosts_active``: hosts with a request in
    flight, ``hosts_waiting``: hosts whose next URL waits for its turn,
    ``hosts_backing_off``: those of them backing off), ``retried`` the
    attempts retried (429/503 answers, connection errors, timeouts), ``not_followed``
    the links of ``nofollow`` pages left out.  ``skipped_origins`` maps each origin that
    robots.txt's fetch outcome (not a rule) ruled out, unreachable ones too, to the
    reason (the error for an unreachable one).

    Every URL is accounted for (see :meth:`unaccounted`): ``links`` counts the links
    pages gave (``links_cut``: pages whose links were read only up to
    ``max_links``); of input and links, ``discovered`` links were new and queued,
    ``duplicates`` named a resource the crawl knew already, ``out_of_scope``,
    ``too_deep`` and ``private_links`` (from a public page into a private
    address) were not crawled, ``dropped`` were turned away for room (``max_seen``
    or ``max_queued``, unnamed crawls only), and ``interrupted`` were in flight
    when the crawl ended.  Links that never become URLs of the crawl are counted
    apart: ``other_schemes`` (``mailto:``, ``javascript:``, ...) and, for links the
    crawl reads itself (``follow_links``), ``rel_nofollow`` (marked
    ``rel="nofollow"``).  ``done_before`` and ``queued_before``: URLs a named crawl
    had finished, and had queued, before this run.

    ``local_failures`` counts attempts this machine could not send (out of file
    descriptors, memory or ports: the crawler's failure, not the sites'); their URLs
    are asked again, and ``local_failure`` tells the last such failure, naming the
    limit and what to raise.

    Bounded whatever the number of hosts: ``hosts`` keeps the tallies of the
    ``max_hosts`` hosts (politeness keys) most recently busy; the tally of a host
    pushed out is added to ``other_hosts`` (``hosts_folded`` counts the tallies added:
    a host busy again gets a tally afresh, which may be pushed out in turn), so the
    per-host tallies and ``other_hosts`` always sum to the totals.  ``skipped_origins``
    keeps the first ``max_hosts`` origins skipped as a whole; ``skipped_origins_more``
    counts the skipped URLs of origins beyond them.
    """

    pages: int = 0
    skipped: int = 0
    errors: int = 0
    invalid: int = 0
    failed: int = 0
    unreachable: int = 0
    discovered: int = 0
    dropped: int = 0
    retried: int = 0
    not_followed: int = 0
    read: int = 0
    queued: int = 0
    in_flight: int = 0
    hosts_queued: int = 0
    hosts_active: int = 0
    hosts_waiting: int = 0
    hosts_backing_off: int = 0
    links: int = 0
    links_cut: int = 0
    duplicates: int = 0
    out_of_scope: int = 0
    too_deep: int = 0
    private_links: int = 0
    other_schemes: int = 0
    rel_nofollow: int = 0
    invalid_links: int = 0
    interrupted: int = 0
    local_failures: int = 0
    done_before: int = 0
    queued_before: int = 0
    input_done: bool = False
    stopped: bool = False
    started: float = field(default_factory=time.monotonic)
    elapsed: float = 0.0
    hosts: dict[str, HostSummary] = field(default_factory=dict)
    skipped_origins: dict[str, str] = field(default_factory=dict)
    local_failure: str = ""
    max_hosts: int = 10_000
    other_hosts: HostSummary = field(default_factory=HostSummary)
    hosts_folded: int = 0
    skipped_origins_more: int = 0

    @property
    def done(self) -> int:
        """URLs finished, whatever the result."""
        return (self.pages + self.failed + self.skipped + self.unreachable + self.errors
                + self.invalid)

    def finished(self, record: CrawlResult) -> None:
        """Count ``record``, a URL's outcome (a page's, a refusal's or an error's: the
        crawl counts invalid input as it reads it), in the totals and its host's tally."""
        tally = self.host(record.key) if record.key is not None else HostSummary()
        kind = record.kind
        if kind == "skipped":
            decision = record.decision
            if decision is not None and decision.unreachable:
                self.unreachable += 1
                tally.unreachable += 1
            else:
                self.skipped += 1
                tally.skipped += 1
            if decision is not None and decision.outcome is not None:
                self._skipped_origin(record.url, str(decision.reason))
        elif kind == "error":
            self.errors += 1
            tally.errors += 1
        elif record.status is not None and record.status >= 400:
            self.failed += 1
            tally.failed += 1
        else:
            self.pages += 1
            tally.pages += 1

    def unaccounted(self) -> int:
        """Input and links not accounted for by the counts (0 once a crawl has ended)."""
        return (self.queued_before + self.read + self.links - self.done - self.duplicates
                - self.out_of_scope - self.too_deep - self.private_links - self.dropped
                - self.interrupted - self.queued - self.in_flight)

    def explain(self) -> list[str]:
        """A line for each kind of URL the crawl did not fetch, and why."""
        reasons = [
            (self.duplicates, "named a resource the crawl already knew (same resource key)"),
            (self.out_of_scope, "links outside the crawl's scope"),
            (self.too_deep, "links deeper than max_depth"),
            (self.private_links, "links from a public page into a private address"),
            (self.dropped, "links turned away for room (max_seen or max_queued)"),
            (self.not_followed, "links of pages that say nofollow"),
            (self.rel_nofollow, "links marked rel=nofollow"),
            (self.other_schemes, "links that are no http(s) URL (mailto:, javascript:, ...)"),
            (self.invalid_links, "links that are no valid URL (recorded as invalid)"),
            (self.invalid - self.invalid_links, "input that is no valid http(s) URL"),
            (self.interrupted, "in flight when the crawl ended (not done)"),
            (self.links_cut, "pages whose links were read only up to max_links"),
            (self.local_failures, "attempts this machine could not send (its own "
                                  f"shortage, not the sites': {self.local_failure})"),
        ]
        return [f"{n} {why}" for n, why in reasons if n]

    def skipped_by_reason(self) -> dict[str, list[str]]:
        """Origins skipped as a whole, grouped by reason (most origins first)."""
        groups: dict[str, list[str]] = {}
        for origin, reason in self.skipped_origins.items():
            groups.setdefault(reason, []).append(origin)
        return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))

    def _skipped_origin(self, url: str, reason: str) -> None:
        try:
            origin = split_origin(url)[0]
        except InvalidURL:
            origin = url
        kept = self.skipped_origins
        if origin in kept:
            return
        if len(kept) < self.max_hosts:
            kept[origin] = reason
        else:
            self.skipped_origins_more += 1

    def host(self, key: str) -> HostSummary:
        """The tally of ``key`` (created on first use; the least recently used one is
        added to ``other_hosts`` when ``max_hosts`` are kept)."""
        hosts = self.hosts
        tally = hosts.pop(key, None)
        if tally is None:
            tally = HostSummary()
            if len(hosts) >= max(1, self.max_hosts):
                self.other_hosts.add(hosts.pop(next(iter(hosts))))
                self.hosts_folded += 1
        hosts[key] = tally  # the most recently used last
        return tally
