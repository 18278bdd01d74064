"""The robots.txt fetch policy (RFC 9309 section 2.3 and 2.4), without I/O.

Given how a fetch of ``/robots.txt`` ended, decide what is stored, how long it
stays fresh, and what it means for the site.  The gate does the I/O and asks
this module what to make of it.

=====================  ============================================  ==========
fetch outcome           meaning                                       rules
=====================  ============================================  ==========
2xx                     the body holds the rules                      parsed
3xx                     followed (max 5 hops, any origin)             of target
more hops, a loop       unavailable                                   allow all
4xx (401/403 too)       unavailable                                   allow all
407                     the proxy's answer, not the site's:           disallow all
                        unreachable (retried as below)
401/403, classic        forbidden (``forbidden_disallows_all=True``)  disallow all
429, 5xx, network       unreachable; retried with capped back-off;    disallow all
                        an earlier good copy is used meanwhile
=====================  ============================================  ==========
"""

from __future__ import annotations

import email.utils
import errno
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..decision import Decision
from ..error_root import Error
from ..records import Outcome, RobotsEntry
from ..urls import redact

__all__ = [
    "ROUTE_ERRNOS",
    "FetchPolicy",
    "LocalFailure",
    "NoRoute",
    "entry_for_error",
    "entry_for_not_modified",
    "entry_for_response",
    "local_failure",
    "outcome_decision",
    "parse_retry_after",
]


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    """Knobs of the robots.txt fetch policy, with RFC 9309's defaults.

    >>> FetchPolicy(freshness=3600, forbidden_disallows_all=True).max_redirects
    5
    """

    #: Seconds a fetched robots.txt stays fresh (RFC 9309 2.4: at most 24 h).
    freshness: float = 24 * 3600.0
    #: Shortest freshness whatever the server says (``max-age=0``, ``no-cache``):
    #: refetching robots.txt before every page would be impolite in itself.
    min_freshness: float = 60.0
    #: Bytes of the body read and parsed (RFC 9309 2.5: at least 500 KiB).
    max_bytes: int = 500 * 1024
    #: Redirect hops followed before robots.txt counts as unavailable.
    max_redirects: int = 5
    #: Seconds allowed for the whole robots.txt fetch (connect, redirects, body).
    timeout: float = 30.0
    #: The 1996 Internet-Draft's rule: 401/403 mean "keep out of the whole site"
    #: (LWP::RobotUA itself read any non-2xx answer as an empty robots.txt).
    forbidden_disallows_all: bool = False
    #: First retry of an unreachable robots.txt after this many seconds, doubling.
    retry_base: float = 10.0
    #: Longest wait between two retries of an unreachable robots.txt.
    retry_cap: float = 3600.0
    #: How long an earlier good copy stands in while robots.txt is unreachable.
    stale_limit: float = 30 * 24 * 3600.0
    #: robots.txt is rechecked after this many requests to the server, fresh or not
    #: (``None``: only when it goes stale).
    recheck_visits: int | None = 1000

    def __post_init__(self) -> None:
        if not 0 < self.timeout < math.inf:
            # An endless fetch would hold every waiter of the origin forever.
            raise ValueError(f"timeout must be a positive number of seconds, not {self.timeout!r}")
        if self.recheck_visits is not None and self.recheck_visits < 1:
            raise ValueError(f"recheck_visits must be at least 1 (or None), "
                             f"not {self.recheck_visits!r}")

    def retry_delay(self, failures: int) -> float:
        """Back-off before the next retry after ``failures`` consecutive failures."""
        return min(self.retry_cap, self.retry_base * 2.0 ** max(0, min(failures - 1, 60)))


_MAX_AGE_RE = re.compile(r"(?:^|[,\s])max-age\s*=\s*\"?([0-9]+)", re.IGNORECASE)
_NO_STORE_RE = re.compile(r"(?:^|[,\s])(?:no-store|no-cache)(?:$|[,\s])", re.IGNORECASE)
#: Longest delay (seconds) a header may state; beyond it the value counts as
#: absent (RFC 9111 1.2.2 takes 2**31 as "the greatest" delta-seconds).
MAX_HEADER_SECONDS = 2**31
#: The one status only a proxy answers (RFC 9110 15.5.8).
PROXY_AUTHENTICATION_REQUIRED = 407
#: Validators and content types longer than this are not kept: no server needs
#: them, and they would be stored with the entry and sent back.
_MAX_STORED_HEADER = 8192


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value if it is text; anything else counts as absent."""
    try:
        value = headers.get(name)
    except Exception:  # a hostile or broken mapping: no header
        return None
    return value if isinstance(value, str) else None


def _stored(value: str | None) -> str | None:
    """A header value as it may be stored: UTF-8 encodable and of sane length.

    aiohttp decodes header bytes with ``surrogateescape``; such a string cannot
    be written to SQLite or Redis, so the undecodable bytes become U+FFFD.
    """
    if value is None or len(value) > _MAX_STORED_HEADER:
        return None
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return value


def _delta_seconds(digits: str) -> float | None:
    """ASCII digits as seconds, or ``None`` past :data:`MAX_HEADER_SECONDS`."""
    digits = digits.lstrip("0") or "0"
    if len(digits) > 10:  # past 2**31 whatever they say; int() refuses > 4300 digits
        return None
    seconds = int(digits)
    return float(seconds) if seconds <= MAX_HEADER_SECONDS else None


def _http_date(value: str) -> float | None:
    """An HTTP date as a timestamp; ``None`` if unparseable, zoneless or out of range."""
    try:
        when = email.utils.parsedate_to_datetime(value)
        if when.tzinfo is None:
            return None
        stamp = when.timestamp()
    except Exception:  # ValueError, OverflowError, IndexError...: a header never raises
        return None
    return stamp if math.isfinite(stamp) else None


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or HTTP date).

    Anything else counts as no ``Retry-After`` at all (``None``): digits that
    are not ASCII, negative or fractional numbers, dates that do not parse or
    are out of range, waits longer than :data:`MAX_HEADER_SECONDS`.  Never raises.

    >>> parse_retry_after("120", 0.0)
    120.0
    >>> parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470.0)
    10.0
    >>> parse_retry_after("soon", 0.0) is None
    True
    >>> parse_retry_after("²", 0.0) is None
    True
    """
    if not value or not isinstance(value, str):
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return _delta_seconds(value)
    when = _http_date(value)
    if when is None:
        return None
    wait = max(0.0, when - now)
    return wait if wait <= MAX_HEADER_SECONDS else None


def _fresh_until(headers: Mapping[str, str], now: float, policy: FetchPolicy) -> float:
    """Our freshness, shortened (never lengthened) by what the server says.

    A ``max-age`` or ``Expires`` that does not parse, or is out of range,
    counts as absent (not as "already expired"): nonsense in a header must not
    turn a good robots.txt into a refetch loop or an error.
    """
    lifetime = policy.freshness
    cache_control = _header(headers, "Cache-Control") or ""
    m = _MAX_AGE_RE.search(cache_control)
    max_age = _delta_seconds(m.group(1)) if m is not None else None
    expires = _header(headers, "Expires")
    if max_age is not None:
        lifetime = min(lifetime, max_age)
    elif _NO_STORE_RE.search(cache_control):
        lifetime = 0.0
    elif expires is not None:
        when = _http_date(expires)
        if when is not None:
            lifetime = min(lifetime, max(0.0, when - now))
    return now + max(lifetime, min(policy.min_freshness, policy.freshness))


def entry_for_response(
    origin: str,
    status: int,
    headers: Mapping[str, str],
    body: bytes | None,
    now: float,
    policy: FetchPolicy,
    previous: RobotsEntry | None = None,
    final_url: str | None = None,
    *,
    name: str = "robots.txt",
) -> RobotsEntry:
    """The entry to store after robots.txt answered ``status`` (redirects already followed).

    A 407 is a proxy's answer, never the site's: unreachable, as a failure to connect is.
    ``name`` is the file's name in the entry's account ("tdmrep.json" for TDMRep's).
    """
    if 200 <= status < 300:
        return RobotsEntry(
            origin=origin,
            outcome=Outcome.OK,
            fetched_at=now,
            fresh_until=_fresh_until(headers, now, policy),
            status=status,
            body=body or b"",
            content_type=_stored(_header(headers, "Content-Type")),
            etag=_stored(_header(headers, "ETag")),
            last_modified=_stored(_header(headers, "Last-Modified")),
            final_url=_redacted(final_url),
            detail=f"{name} answered {status}",
            good_at=now,
        )
    if status == PROXY_AUTHENTICATION_REQUIRED:
        # RFC 9110 15.5.8: a proxy's answer, never the site's; robots.txt was not reached.
        return entry_for_error(
            origin, f"the proxy answered {status} (Proxy Authentication Required) for {name}",
            now, policy, previous, status=status)
    forbidden = status in (401, 403) and policy.forbidden_disallows_all
    if forbidden or (400 <= status < 500 and status != 429):
        return RobotsEntry(
            origin=origin,
            outcome=Outcome.FORBIDDEN if forbidden else Outcome.UNAVAILABLE,
            fetched_at=now,
            fresh_until=_fresh_until(headers, now, policy),
            status=status,
            final_url=_redacted(final_url),
            detail=f"{name} answered {status}",
        )
    # 429, 5xx and anything else unexpected (1xx, 3xx without Location): unreachable.
    retry_after = parse_retry_after(_header(headers, "Retry-After"), now)
    return entry_for_error(
        origin, f"{name} answered {status}", now, policy, previous,
        status=status, retry_after=retry_after,
    )


def entry_for_redirect_failure(
    origin: str, why: str, now: float, policy: FetchPolicy, final_url: str | None = None
) -> RobotsEntry:
    """Too many redirects, or a loop: robots.txt counts as unavailable (RFC 9309 2.3.1.2)."""
    return RobotsEntry(
        origin=origin,
        outcome=Outcome.UNAVAILABLE,
        fetched_at=now,
        fresh_until=now + policy.freshness,
        final_url=_redacted(final_url),
        detail=why,
    )


def entry_for_error(
    origin: str,
    why: str,
    now: float,
    policy: FetchPolicy,
    previous: RobotsEntry | None = None,
    *,
    status: int | None = None,
    retry_after: float | None = None,
) -> RobotsEntry:
    """robots.txt is unreachable (429, 5xx, timeout, network): disallow all, retry later.

    An earlier good copy, if younger than ``policy.stale_limit``, stands in.
    """
    failures = (previous.failures if previous is not None else 0) + 1
    wait = policy.retry_delay(failures)
    if retry_after is not None and math.isfinite(retry_after):
        # The server said when to come back: believe it (within our cap).
        wait = min(policy.retry_cap, retry_after)
    if (
        previous is not None
        and previous.outcome == Outcome.OK
        and previous.good_at is not None
        and now - previous.good_at <= policy.stale_limit
    ):
        return previous.copy(
            fetched_at=now,
            fresh_until=now + wait,
            failures=failures,
            detail=f"{why}; using the copy fetched at {_stamp(previous.good_at)}",
        )
    return RobotsEntry(
        origin=origin,
        outcome=Outcome.UNREACHABLE,
        fetched_at=now,
        fresh_until=now + wait,
        status=status,
        failures=failures,
        detail=why,
    )


def entry_for_not_modified(
    previous: RobotsEntry,
    headers: Mapping[str, str],
    now: float,
    policy: FetchPolicy,
    *,
    name: str = "robots.txt",
) -> RobotsEntry:
    """A 304 renews the rules we have without a body."""
    return previous.copy(
        fetched_at=now,
        fresh_until=_fresh_until(headers, now, policy),
        failures=0,
        good_at=now,
        etag=_stored(_header(headers, "ETag")) or previous.etag,
        last_modified=_stored(_header(headers, "Last-Modified")) or previous.last_modified,
        detail=f"{name} not modified (304)",
    )


def outcome_decision(entry: RobotsEntry) -> Decision | None:
    """The verdict for every URL of the site when the fetch outcome decides, else ``None``."""
    outcome = entry.outcome
    if outcome == Outcome.OK:
        return None
    if outcome == Outcome.UNAVAILABLE:
        return Decision(
            True,
            f"{entry.detail}: robots.txt is unavailable, so everything is allowed "
            "(RFC 9309 2.3.1.3)",
            outcome=outcome,
        )
    if outcome == Outcome.FORBIDDEN:
        return Decision(
            False,
            f"{entry.detail}: under the classic convention the whole site is off limits",
            outcome=outcome,
        )
    return Decision(
        False,
        f"{entry.detail}: robots.txt is unreachable, so the site counts as fully disallowed "
        "(RFC 9309 2.3.1.4)",
        outcome=Outcome.UNREACHABLE,
        error=entry.detail,
    )


def _redacted(url: str | None) -> str | None:
    """A URL as it may be stored: without a password (see :func:`robotgate.urls.redact`)."""
    return redact(url) if url else url


def _stamp(t: float) -> str:
    return email.utils.formatdate(t, usegmt=True)


class LocalFailure(Error, OSError):
    """A request could not be sent because this machine ran out of something (file
    descriptors, memory, ephemeral ports): the crawler's failure, not the site's.

    It is never a verdict on the site: nothing is cached or stored for it, and the
    URL is neither allowed nor refused; ask again once the resource frees.
    ``what`` is the request (its URL without the password), ``resource`` names what ran
    out, ``remedy`` what to raise; ``errno`` is the system's code (None: a MemoryError).
    """

    def __init__(self, what: str, resource: str, remedy: str, code: int | None) -> None:
        super().__init__(f"{what}: this machine ran out of {resource}, which is no "
                         f"answer of the site's and is not kept as one; {remedy}")
        self.errno = code
        self.what = what
        self.resource = resource
        self.remedy = remedy


class NoRoute(Error):
    """A connect error meaning this machine has no address or route of the family of
    any of the site's addresses (IPv6 disabled, no default route): the site is
    unreachable from this machine, which is no shortage of it.  A mark the adapter
    that connects adds to its client's error, having tried every address."""


#: The connect errors that may mean the machine lacks the destination's address family
#: or route (EADDRNOTAVAIL also means its ports ran out: the adapter tells them apart).
ROUTE_ERRNOS = frozenset({errno.EADDRNOTAVAIL, errno.ENETUNREACH, errno.EAFNOSUPPORT})

#: What each local errno means ran out, and what to raise.
_LOCAL_ERRNOS: dict[int, tuple[str, str]] = {
    errno.EMFILE: ("open files for this process (EMFILE{limit})",
                   "raise the limit (ulimit -n; LimitNOFILE= under systemd) or lower "
                   "Network(max_connections=...)"),
    errno.ENFILE: ("open files for the whole system (ENFILE)",
                   "raise fs.file-max (sysctl) or run fewer processes"),
    errno.ENOMEM: ("memory (ENOMEM)", "give the process more memory or lower max_origins"),
    errno.ENOBUFS: ("socket buffers (ENOBUFS)",
                    "give the system more memory or send fewer requests at once"),
    errno.EADDRNOTAVAIL: ("local ports (EADDRNOTAVAIL)",
                          "widen net.ipv4.ip_local_port_range or send fewer requests at once"),
}
#: How deep an exception's causes are looked through (a client wraps one or two deep).
_CAUSE_DEPTH = 8


def local_failure(exc: BaseException, what: str,
                  open_files: int | None = None) -> LocalFailure | None:
    """The :class:`LocalFailure` ``exc`` is, or was caused by (``what``: the request,
    as its account names it; ``open_files``: the process's open-file limit, named in
    the account of an EMFILE); None when it is no shortage of this machine's.

    >>> local_failure(OSError(24, "Too many open files"), "robots.txt", 256).resource
    'open files for this process (EMFILE, ulimit -n 256)'
    >>> local_failure(ConnectionRefusedError(111, "refused"), "robots.txt") is None
    True
    """
    seen: BaseException | None = exc
    for _ in range(_CAUSE_DEPTH):
        if seen is None:
            return None
        if isinstance(seen, LocalFailure):
            return seen
        if isinstance(seen, NoRoute):
            return None  # the site's unreachability for this machine
        if isinstance(seen, MemoryError):
            return LocalFailure(what, "memory (MemoryError)",
                                "give the process more memory or lower max_origins", None)
        code = seen.errno if isinstance(seen, OSError) else None
        if code is not None and code in _LOCAL_ERRNOS:
            resource, remedy = _LOCAL_ERRNOS[code]
            limit = f", ulimit -n {open_files}" if open_files is not None else ""
            return LocalFailure(what, resource.format(limit=limit), remedy, code)
        seen = seen.__cause__ or seen.__context__
    return None
