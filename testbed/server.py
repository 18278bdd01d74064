"""A single aiohttp server that plays many robots.txt hosts on loopback.

Every virtual host is its own loopback address (``127.0.1.1``, ``127.0.1.2``,
...); all of them share one TCP port, with one listening socket per address.
Verified on the build machine: the kernel's local routing table holds
``local 127.0.0.0/8 dev lo``, so binding and connecting to e.g. ``127.0.3.7``
works with no interface setup (clients connect from source ``127.0.0.1``).

Each host serves one robots.txt *scenario* (see :data:`SCENARIOS`) plus a small
deterministic site of ``/page/N`` and ``/private/N`` pages, and records every
request so benchmarks and tests can check politeness: how often robots.txt was
fetched, whether disallowed pages were requested, and the spacing of page
requests. ``127.0.0.1`` on the same port answers the control endpoints
``GET /__stats``, ``POST /__reset`` and ``GET /__info``.

A request's time is when its bytes reached the socket, as the kernel stamped
them (``SO_TIMESTAMPNS``, read with ``recvmsg``), not when this process got
round to reading them: a busy server loop does not shorten the spacing it
records.  The server is ready once the kernel stamps on arrival (it turns
stamps on a moment after they are first asked for).  Where the kernel gives no
stamp, the time the bytes were read.

Use it in-process (``async with BenchServer(...) as srv``) or as a separate
process::

    python -m testbed.server --hosts 1000 --mix partial=0.5,allow=0.3,crawl_delay=0.2

which prints one JSON line (port, hosts, scenarios, control URL) once ready.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import email.utils
import hashlib
import itertools
import json
import random
import resource
import signal
import socket
import struct
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.web_protocol import RequestHandler

__all__ = [
    "SCENARIOS",
    "SO_TIMESTAMPNS",
    "BenchServer",
    "HostPlan",
    "HostStats",
    "PageRecord",
    "RobotsRecord",
    "host_addresses",
    "is_disallowed",
    "kernel_time",
    "mixed_plans",
    "page_paths",
    "robots_body",
    "stamp_probe",
    "stamps_on_arrival",
]

#: Every robots.txt scenario a host can play, in a stable order.
SCENARIOS: tuple[str, ...] = (
    "allow",
    "partial",
    "crawl_delay",
    "404",
    "500",
    "503_retry",
    "429",
    "slow",
    "redirect_chain",
    "redirect_loop",
    "huge",
    "garbage",
    "reset",
)

# Scenarios whose robots.txt is "allow all except /private/".
_PRIVATE_DISALLOWED = frozenset({"partial", "crawl_delay", "slow", "redirect_chain", "huge"})
# RFC 9309 §2.3.1.4: an unreachable robots.txt (5xx, network error) means full
# disallow; 429 is treated the same way by this harness, and so is a body that is no
# text (``garbage``: random bytes may be data of a coding nobody can undo).
_ALL_DISALLOWED = frozenset({"500", "503_retry", "429", "reset", "garbage"})

_PARTIAL_RULES = "User-agent: *\nDisallow: /private/\n"
_ALLOW_RULES = "User-agent: *\nDisallow:\n"
_HUGE_SIZE = 2 * 1024 * 1024
_GARBAGE_SIZE = 10 * 1024
_PAGE_SIZE = 1024
# Redirect maps for the two redirect scenarios (same host, relative to it).
_CHAIN = {"/robots.txt": "/r/1", "/r/1": "/r/2", "/r/2": "/r/3"}
_CHAIN_END = "/r/3"
_LOOP = {"/robots.txt": "/loop/a", "/loop/a": "/loop/b", "/loop/b": "/loop/a"}
# Fraction arithmetic in integers so page layout never depends on float rounding.
_FRACTION_SCALE = 10_000


def is_disallowed(scenario: str, path: str) -> bool:
    """Whether a polite crawler must not fetch ``path`` on a host playing ``scenario``.

    Allow-except-private scenarios disallow ``/private/*``; scenarios whose
    robots.txt is unreachable (5xx, 429, connection reset, a body that is no text)
    disallow every path but ``/robots.txt`` itself; the rest (``allow``, ``404``,
    ``redirect_loop``) disallow nothing.
    """
    if scenario in _PRIVATE_DISALLOWED:
        return path.startswith("/private/")
    if scenario in _ALL_DISALLOWED:
        return path != "/robots.txt"
    if scenario in SCENARIOS:
        return False
    raise ValueError(f"unknown scenario {scenario!r}")


def _scaled_fraction(private_fraction: float) -> int:
    if not 0.0 <= private_fraction <= 1.0:
        raise ValueError("private_fraction must be within [0, 1]")
    return round(private_fraction * _FRACTION_SCALE)


def _is_private_index(index: int, scaled: int) -> bool:
    # Index i is private when the running count floor(i*f) steps up, which
    # spreads the private pages evenly (every 5th page for f=0.2).
    return ((index + 1) * scaled) // _FRACTION_SCALE > (index * scaled) // _FRACTION_SCALE


def _page_path(index: int, scaled: int) -> str:
    return f"/private/{index}" if _is_private_index(index, scaled) else f"/page/{index}"


def page_paths(pages: int, private_fraction: float = 0.2) -> list[str]:
    """The ``pages`` page paths of one host, in crawl order.

    Path ``i`` is ``/page/i`` or, for an evenly spread ``private_fraction`` of
    them, ``/private/i`` (with 0.2: indexes 4, 9, 14, ...). The same layout is
    used for the links inside served pages.
    """
    scaled = _scaled_fraction(private_fraction)
    return [_page_path(i, scaled) for i in range(pages)]


def robots_body(plan: HostPlan, seed: int = 0) -> bytes | None:
    """The robots.txt body a host with ``plan`` serves with 200, or ``None``.

    ``seed`` feeds the ``garbage`` bytes when ``plan.seed`` is unset.
    """
    scenario = plan.scenario
    if scenario == "allow":
        return _ALLOW_RULES.encode()
    if scenario in ("partial", "slow", "redirect_chain"):
        return _PARTIAL_RULES.encode()
    if scenario == "crawl_delay":
        return f"User-agent: *\nCrawl-delay: {plan.crawl_delay:g}\nDisallow: /private/\n".encode()
    if scenario == "huge":
        return _huge_body()
    if scenario == "garbage":
        return _garbage_body(plan.seed if plan.seed is not None else seed)
    return None


@lru_cache(maxsize=1)
def _huge_body() -> bytes:
    # The real rules come first so parsers that stop at 500 KiB (RFC 9309
    # §2.5 allows it) still see them; filler rules never match /page/ or /private/.
    parts = [_PARTIAL_RULES]
    size = len(_PARTIAL_RULES)
    n = 0
    while size < _HUGE_SIZE:
        line = (
            f"# filler {n:08d}: padding so the file is large\n"
            if n % 2
            else f"Disallow: /filler/{n:08d}/\n"
        )
        parts.append(line)
        size += len(line)
        n += 1
    return "".join(parts).encode()[:_HUGE_SIZE]


@lru_cache(maxsize=256)
def _garbage_body(seed: int) -> bytes:
    return random.Random(seed).randbytes(_GARBAGE_SIZE)


_FILLER = (
    "This page exists so that a crawler has something to fetch. "
    "Its links are deterministic, so a breadth-first spider reaches every allowed page. "
)


@lru_cache(maxsize=65_536)
def _page_body(path: str, index: int, pages: int, scaled: int) -> bytes:
    # Links: the next page, the next allowed page (so allowed pages stay
    # reachable without crossing private ones), a binary-tree fan-out and one
    # long jump; private targets appear too so spiders meet disallowed links.
    targets: list[int] = []
    nxt = index + 1
    while nxt < index + pages and _is_private_index(nxt % pages, scaled):
        nxt += 1
    for j in (index + 1, nxt, 2 * index + 1, 2 * index + 2, 7 * index + 3):
        j %= pages
        if j != index and j not in targets:
            targets.append(j)
    links = "".join(f'<li><a href="{_page_path(j, scaled)}">page {j}</a></li>' for j in targets)
    head = f"<!doctype html><html><head><title>{path}</title></head><body><h1>{path}</h1>"
    tail = f"<ul>{links}</ul></body></html>\n"
    room = max(0, _PAGE_SIZE - len(head) - len(tail) - len("<p></p>"))
    filler = (_FILLER * (room // len(_FILLER) + 1))[:room]
    return f"{head}<p>{filler}</p>{tail}".encode()


@dataclass(frozen=True, slots=True)
class HostPlan:
    """How one virtual host behaves.

    ``scenario`` is one of :data:`SCENARIOS`. ``retry_after`` is the
    ``Retry-After`` of ``503_retry`` (default 1) and ``429`` (default: none).
    ``page_status`` (e.g. 429 or 503) makes pages answer that status with
    ``page_retry_after``; ``page_status_times`` limits it to the first N page
    requests (``None``: always). ``max_age`` adds ``Cache-Control: max-age`` to
    robots.txt. ``pages`` is the site size used for links; ``seed`` seeds the
    ``garbage`` bytes (default: the host index). ``rate_limit`` (seconds) makes
    the host a rate-limited server: a page request arriving sooner than that
    after the last page it let through is answered 429 without ``Retry-After``.
    """

    scenario: str = "allow"
    crawl_delay: float = 0.2
    retry_after: int | None = None
    slow_seconds: float = 2.0
    page_delay: float = 0.0
    page_status: int | None = None
    page_retry_after: int | None = None
    page_status_times: int | None = None
    max_age: int | None = None
    pages: int = 100
    private_fraction: float = 0.2
    seed: int | None = None
    rate_limit: float | None = None

    def __post_init__(self) -> None:
        if self.scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {self.scenario!r}; expected one of {SCENARIOS}")
        if self.pages < 1:
            raise ValueError("pages must be >= 1")
        _scaled_fraction(self.private_fraction)
        for name in ("crawl_delay", "slow_seconds", "page_delay"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.rate_limit is not None and self.rate_limit <= 0:
            raise ValueError("rate_limit must be > 0 (or None)")


@dataclass(frozen=True, slots=True)
class RobotsRecord:
    """One request for a robots.txt path (``/robots.txt`` or a redirect hop).

    ``status`` is 0 when the connection was reset instead of answered; header
    fields hold the request header value or ``None`` when absent.
    """

    time: float
    path: str
    status: int
    user_agent: str | None
    from_: str | None
    if_none_match: str | None
    if_modified_since: str | None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form; header presence is given as booleans too."""
        return {
            "time": self.time,
            "path": self.path,
            "status": self.status,
            "user_agent": self.user_agent,
            "from": self.from_,
            "if_none_match": self.if_none_match,
            "if_modified_since": self.if_modified_since,
            "has_user_agent": self.user_agent is not None,
            "has_from": self.from_ is not None,
            "has_if_none_match": self.if_none_match is not None,
            "has_if_modified_since": self.if_modified_since is not None,
        }


@dataclass(frozen=True, slots=True)
class PageRecord:
    """One page request: arrival ``time`` (``time.monotonic()``), path, status."""

    time: float
    path: str
    status: int


@dataclass(frozen=True, slots=True)
class HostStats:
    """What one host saw since start or the last reset.

    ``robots_requests``/``robots_times`` count requests for ``/robots.txt``
    itself; ``redirect_hops`` counts requests for redirect targets
    (``/r/*``, ``/loop/*``); ``robots_304`` counts 304 answers on either.
    Intervals are between consecutive page request arrivals (``None`` with
    fewer than two pages).
    """

    host: str
    scenario: str
    robots_requests: int
    robots_times: list[float]
    robots_304: int
    redirect_hops: int
    robots_log: list[RobotsRecord]
    page_requests: int
    disallowed_page_requests: int
    distinct_pages: int
    page_times: list[float]
    page_log: list[PageRecord]
    min_interval: float | None
    mean_interval: float | None
    max_concurrent_pages: int
    other_requests: int

    def to_json(self, *, times: bool = True, log: bool = True) -> dict[str, Any]:
        """JSON-ready form; ``times``/``log`` drop the bulky lists when False."""
        out: dict[str, Any] = {
            "scenario": self.scenario,
            "robots_requests": self.robots_requests,
            "robots_304": self.robots_304,
            "redirect_hops": self.redirect_hops,
            "page_requests": self.page_requests,
            "disallowed_page_requests": self.disallowed_page_requests,
            "distinct_pages": self.distinct_pages,
            "min_interval": self.min_interval,
            "mean_interval": self.mean_interval,
            "max_concurrent_pages": self.max_concurrent_pages,
            "other_requests": self.other_requests,
        }
        if times:
            out["robots_times"] = self.robots_times
            out["page_times"] = self.page_times
        if log:
            out["robots_log"] = [r.to_json() for r in self.robots_log]
            out["page_log"] = [[p.time, p.path, p.status] for p in self.page_log]
        return out


class _Host:
    """Mutable per-host state: plan, precomputed responses and records."""

    __slots__ = (
        "addr",
        "disallowed",
        "in_flight",
        "index",
        "last_let_through",
        "max_in_flight",
        "ok_headers",
        "other",
        "page_log",
        "page_status_served",
        "page_times",
        "pages_seen",
        "plan",
        "redirect_hops",
        "robots_304",
        "robots_body",
        "robots_log",
        "robots_times",
        "scaled",
    )

    def __init__(self, index: int, addr: str, plan: HostPlan, last_modified: str) -> None:
        self.index = index
        self.addr = addr
        self.set_plan(plan, last_modified)
        self.clear()

    def set_plan(self, plan: HostPlan, last_modified: str) -> None:
        self.plan = plan
        self.scaled = _scaled_fraction(plan.private_fraction)
        self.robots_body = robots_body(plan, seed=self.index)
        headers = {"Content-Type": "text/plain"}
        if self.robots_body is not None:
            digest = hashlib.sha1(self.robots_body, usedforsecurity=False).hexdigest()
            headers["ETag"] = f'"{digest[:20]}"'
            headers["Last-Modified"] = last_modified
        if plan.max_age is not None:
            headers["Cache-Control"] = f"max-age={plan.max_age}"
        self.ok_headers = headers

    def clear(self) -> None:
        self.robots_log: list[RobotsRecord] = []
        self.robots_times: list[float] = []
        self.robots_304 = 0
        self.redirect_hops = 0
        self.page_times: list[float] = []
        self.page_log: list[PageRecord] = []
        self.pages_seen: set[str] = set()
        self.disallowed = 0
        self.other = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.page_status_served = 0
        self.last_let_through = -float("inf")

    def snapshot(self) -> HostStats:
        times = list(self.page_times)
        gaps = [b - a for a, b in itertools.pairwise(times)]
        return HostStats(
            host=self.addr,
            scenario=self.plan.scenario,
            robots_requests=len(self.robots_times),
            robots_times=list(self.robots_times),
            robots_304=self.robots_304,
            redirect_hops=self.redirect_hops,
            robots_log=list(self.robots_log),
            page_requests=len(times),
            disallowed_page_requests=self.disallowed,
            distinct_pages=len(self.pages_seen),
            page_times=times,
            page_log=list(self.page_log),
            min_interval=min(gaps) if gaps else None,
            mean_interval=sum(gaps) / len(gaps) if gaps else None,
            max_concurrent_pages=self.max_in_flight,
            other_requests=self.other,
        )


def host_addresses(count: int, first: str = "127.0.1.1") -> list[str]:
    """``count`` loopback addresses from ``first`` upward, skipping .0 and .255."""
    addresses: list[str] = []
    n = int.from_bytes(socket.inet_aton(first), "big")
    last = int.from_bytes(socket.inet_aton("127.255.255.254"), "big")
    while len(addresses) < count:
        if n > last:
            raise ValueError(f"127.0.0.0/8 cannot hold {count} hosts from {first}")
        if n & 0xFF not in (0, 0xFF):
            addresses.append(socket.inet_ntoa(n.to_bytes(4, "big")))
        n += 1
    return addresses


def _raise_nofile_limit() -> None:
    # One listening socket per host plus accepted connections: 10,000 hosts
    # overflow the usual soft limit of 1024.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _candidate_ports(count: int) -> list[int]:
    # Stay below the ephemeral range so client sockets never compete for the port.
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    rng = random.Random()
    top = max(low - 1, 10_001)
    return [rng.randint(10_000, top) for _ in range(count)]


# Linux's value where the socket module does not name it.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_STAMP_SPACE = socket.CMSG_SPACE(struct.calcsize("qq"))


def kernel_time(ancillary: list[tuple[int, int, bytes]]) -> float | None:
    """The kernel's receive stamp among ``recvmsg``'s ancillary data, on the
    ``time.monotonic()`` scale (None: no stamp)."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            seconds, nanoseconds = struct.unpack("qq", data[:16])
            # The stamp is wall-clock time: moved onto the monotonic scale the
            # records use.
            return float(seconds + nanoseconds * 1e-9 - wall_ahead_of_monotonic())
    return None


def wall_ahead_of_monotonic() -> float:
    """How far the wall clock is ahead of the monotonic one, read between two monotonic
    reads, the closest pair of a few: a busy machine may preempt the process between
    two reads for milliseconds, which one pair would count into every stamp."""
    best_gap, ahead = float("inf"), 0.0
    for _ in range(5):
        before = time.monotonic()
        wall = time.time()
        after = time.monotonic()
        if after - before < best_gap:
            best_gap, ahead = after - before, wall - (before + after) / 2
    return ahead


#: How long a probe datagram waits to be read, and how long the kernel may take to
#: turn its receive stamps on.
_PROBE_WAIT = 0.005
_STAMPS_WAIT = 10.0


def stamp_probe() -> socket.socket:
    """A loopback UDP socket that asks for receive stamps, to send itself datagrams."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        probe.bind(("127.0.0.1", 0))
    except OSError:
        probe.close()
        raise
    return probe


async def stamps_on_arrival() -> None:
    """Return once the kernel stamps packets as they arrive.

    Linux turns receive stamps on for the whole machine when a first socket asks for
    them (here, the listeners just bound), but from a work queue: until that runs, a
    packet gets no stamp on arrival and is stamped when read, which on a busy machine
    can be a while (0.3 s once in CI).  A datagram to itself shows when they are on.
    A kernel that gives no stamp at all is not waited for: its records are read times.
    """
    with stamp_probe() as probe:
        probe.setblocking(False)
        deadline = time.monotonic() + _STAMPS_WAIT
        while True:
            probe.sendto(b"?", probe.getsockname())
            await asyncio.sleep(_PROBE_WAIT)
            try:
                _, ancillary, _, _ = probe.recvmsg(1, _STAMP_SPACE)
            except BlockingIOError:
                ancillary = None
            read = time.monotonic()
            if ancillary is not None:
                stamp = kernel_time(ancillary)
                if stamp is None or read - stamp >= _PROBE_WAIT / 2:
                    return
            if read > deadline:
                raise RuntimeError(f"the kernel stamped no packet on arrival in {_STAMPS_WAIT} s:"
                                   " the records would be read times")


class _StampedSocket(socket.socket):
    """An accepted connection that reads with ``recvmsg`` and keeps the kernel's
    receive time of the latest bytes (:attr:`arrived`)."""

    arrived: float | None = None

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data, ancillary, _, _ = self.recvmsg(bufsize, _STAMP_SPACE, flags)
        if data:
            stamp = kernel_time(ancillary)
            self.arrived = stamp if stamp is not None else time.monotonic()
        return data


class _StampingListener(socket.socket):
    """A listening socket whose connections are :class:`_StampedSocket` (the
    event loop reads each connection with its ``recv``)."""

    def accept(self) -> tuple[socket.socket, Any]:
        fd, address = self._accept()  # type: ignore[attr-defined]
        conn = _StampedSocket(self.family, self.type, self.proto, fileno=fd)
        return conn, address


def _bind_all(addresses: Sequence[str], port: int) -> list[socket.socket]:
    """Bind one TCP socket per address on ``port`` (0: kernel picks, from the first);
    the kernel stamps each connection's bytes as they arrive."""
    socks: list[socket.socket] = []
    try:
        for addr in addresses:
            sock: socket.socket = _StampingListener(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(sock)
            # SO_REUSEADDR only skips TIME_WAIT leftovers; a live listener still conflicts.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # Inherited by every accepted connection.
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            sock.bind((addr, port))
            if port == 0:
                port = sock.getsockname()[1]
            sock.setblocking(False)
    except OSError:
        for sock in socks:
            sock.close()
        raise
    return socks


def _etag_matches(header: str, etag: str) -> bool:
    # Weak comparison (RFC 9110 §13.1.2): "W/" prefixes are ignored.
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate == "*":
            return True
        if candidate.startswith("W/"):
            candidate = candidate[2:]
        if candidate == etag:
            return True
    return False


def _not_modified_since(header: str, last_modified_epoch: float) -> bool:
    try:
        since = email.utils.parsedate_to_datetime(header).timestamp()
    except (TypeError, ValueError, IndexError):
        return False
    return since >= last_modified_epoch


_LINGER_RESET = struct.pack("ii", 1, 0)
_HTML_HEADERS = {"Content-Type": "text/html; charset=utf-8"}


class _TimedHandler(RequestHandler):
    """An aiohttp connection handler that notes when request bytes arrive: the
    kernel's stamp on its socket's latest bytes, else when they were read."""

    arrived: float | None = None
    _stamped: _StampedSocket | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        sock = transport.get_extra_info("socket")
        sock = getattr(sock, "_sock", sock)  # asyncio hands out a wrapper (TransportSocket)
        if isinstance(sock, _StampedSocket):
            self._stamped = sock
        super().connection_made(transport)

    def data_received(self, data: bytes) -> None:
        # One request at a time per connection (clients don't pipeline), so
        # the latest arrival is the current request's.
        stamped = self._stamped
        arrived = stamped.arrived if stamped is not None else None
        self.arrived = arrived if arrived is not None else time.monotonic()
        super().data_received(data)


class _TimedServer(web.Server):
    def __call__(self) -> RequestHandler:
        return _TimedHandler(self, loop=self._loop, **self._kwargs)


class BenchServer:
    """Many loopback hosts, one port, one aiohttp low-level server.

    ``plans`` gives one :class:`HostPlan` (or bare scenario name) per host;
    host ``i`` listens on ``hosts[i]``. ``port=0`` picks a port free on every
    address. Control endpoints live on ``control_host`` on the same port.
    ``extra_ports`` more ports serve the same hosts (one server, several
    origins): records stay per host address, whatever the port.
    """

    def __init__(
        self,
        plans: Sequence[HostPlan | str],
        *,
        port: int = 0,
        control_host: str = "127.0.0.1",
        first_host: str = "127.0.1.1",
        backlog: int = 512,
        shutdown_timeout: float = 0.5,
        extra_ports: int = 0,
    ) -> None:
        self._plans = [HostPlan(p) if isinstance(p, str) else p for p in plans]
        self.hosts: list[str] = host_addresses(len(self._plans), first_host)
        if control_host in self.hosts:
            raise ValueError("control_host overlaps the host addresses")
        self.control_host = control_host
        self._requested_port = port
        self._port: int | None = None
        self._extra_ports = extra_ports
        self.ports: list[int] = []
        self._backlog = backlog
        self._shutdown_timeout = shutdown_timeout
        # One fixed Last-Modified per server so If-Modified-Since checks are stable.
        self._last_modified_epoch = float(int(time.time()) - 3600)
        self._last_modified = email.utils.formatdate(self._last_modified_epoch, usegmt=True)
        self._hosts = [
            _Host(i, addr, plan, self._last_modified)
            for i, (addr, plan) in enumerate(zip(self.hosts, self._plans, strict=True))
        ]
        self._by_addr = {h.addr: h for h in self._hosts}
        self._runner: web.ServerRunner | None = None
        self._servers: list[asyncio.AbstractServer] = []

    @classmethod
    def mixed(
        cls,
        n_hosts: int,
        mix: Mapping[str, float],
        seed: int = 0,
        *,
        template: HostPlan | None = None,
        overrides: Mapping[int, HostPlan] | None = None,
        **kwargs: Any,
    ) -> BenchServer:
        """``n_hosts`` hosts whose scenarios follow the weights in ``mix``.

        Counts are exact (largest remainder) and the order is shuffled by
        ``seed``, so equal arguments give equal servers. ``template`` supplies
        the other plan fields; ``overrides`` replaces the plan of given indexes.
        """
        return cls(
            mixed_plans(n_hosts, mix, seed, template=template, overrides=overrides), **kwargs
        )

    @classmethod
    def all_scenarios(cls, template: HostPlan | None = None, **kwargs: Any) -> BenchServer:
        """One host per scenario, in :data:`SCENARIOS` order."""
        base = template or HostPlan()
        return cls([dataclasses.replace(base, scenario=s) for s in SCENARIOS], **kwargs)

    # -- lifecycle -------------------------------------------------------

    async def start(self) -> None:
        """Bind every address on one port and start serving."""
        if self._runner is not None:
            raise RuntimeError("server already started")
        _raise_nofile_limit()
        socks = self._bind()
        self._port = socks[0].getsockname()[1]
        self.ports = [self._port]
        try:
            for _ in range(self._extra_ports):
                more = self._bind_hosts()
                self.ports.append(more[0].getsockname()[1])
                socks += more
        except OSError:
            for sock in socks:
                sock.close()
            raise
        try:
            await stamps_on_arrival()  # the listeners asked for stamps: wait till they come
        except BaseException:
            for sock in socks:
                sock.close()
            raise
        # A low-level web.Server skips routing and middlewares (the handler
        # dispatches by local address and path), keeping per-request cost small.
        web_server = _TimedServer(self._handle, access_log=None)
        runner = web.ServerRunner(web_server, shutdown_timeout=self._shutdown_timeout)
        await runner.setup()
        self._runner = runner
        loop = asyncio.get_running_loop()
        try:
            # Plain create_server per socket rather than web.SockSite: the
            # runner's site registry costs O(n) per site, ~1.7 s at 10,000 hosts.
            for sock in socks:
                server = await loop.create_server(web_server, sock=sock, backlog=self._backlog)
                self._servers.append(server)
        except BaseException:
            for sock in socks[len(self._servers) :]:
                sock.close()
            await self.close()
            raise

    def _bind(self) -> list[socket.socket]:
        # The control address goes first: it is the one most likely taken.
        addresses = [self.control_host, *self.hosts]
        if self._requested_port:
            return _bind_all(addresses, self._requested_port)
        error: OSError | None = None
        for port in [*_candidate_ports(5), 0, 0, 0]:
            try:
                return _bind_all(addresses, port)
            except OSError as exc:
                error = exc
        assert error is not None
        raise OSError(f"no port free on all {len(addresses)} addresses: {error}") from error

    def _bind_hosts(self) -> list[socket.socket]:
        # Another port for the hosts only (control stays on the first).
        error: OSError | None = None
        for port in [*_candidate_ports(5), 0, 0, 0]:
            if port in self.ports:
                continue
            try:
                return _bind_all(self.hosts, port)
            except OSError as exc:
                error = exc
        raise OSError(f"no second port free on all {len(self.hosts)} hosts: {error}") from error

    async def close(self) -> None:
        """Stop listening and close connections (in-flight handlers get ``shutdown_timeout``)."""
        for server in self._servers:
            server.close()
        self._servers.clear()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> BenchServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- addresses -------------------------------------------------------

    @property
    def port(self) -> int:
        """The shared TCP port (only once started)."""
        if self._port is None:
            raise RuntimeError("server not started")
        return self._port

    @property
    def plans(self) -> list[HostPlan]:
        """The current plan of each host, in host order."""
        return [h.plan for h in self._hosts]

    @property
    def scenarios(self) -> list[str]:
        """The scenario of each host, in host order."""
        return [h.plan.scenario for h in self._hosts]

    def base_url(self, i: int) -> str:
        """``http://ADDR:PORT`` of host ``i``."""
        return f"http://{self.hosts[i]}:{self.port}"

    def url(self, i: int, path: str) -> str:
        """Absolute URL of ``path`` on host ``i``."""
        return self.base_url(i) + path

    @property
    def control_url(self) -> str:
        """``http://127.0.0.1:PORT`` (control endpoints live below it)."""
        return f"http://{self.control_host}:{self.port}"

    def info(self) -> dict[str, Any]:
        """The ready line of the CLI: port, hosts, scenarios, control URL."""
        return {
            "port": self.port,
            "ports": list(self.ports),
            "hosts": list(self.hosts),
            "scenarios": self.scenarios,
            "control": f"{self.control_url}/__stats",
        }

    # -- records ---------------------------------------------------------

    def set_plan(self, i: int, plan: HostPlan | str) -> None:
        """Change host ``i``'s behaviour while running (records are kept)."""
        if isinstance(plan, str):
            plan = HostPlan(plan)
        self._hosts[i].set_plan(plan, self._last_modified)

    def stats(self) -> dict[str, HostStats]:
        """Per-host records, keyed by host address in host order."""
        return {h.addr: h.snapshot() for h in self._hosts}

    def host_stats(self, i: int) -> HostStats:
        """Records of host ``i``."""
        return self._hosts[i].snapshot()

    def stats_json(
        self, *, times: bool = True, log: bool = True, host: str | None = None
    ) -> dict[str, Any]:
        """What ``GET /__stats`` returns: per-host records and totals."""
        chosen = [self._by_addr[host]] if host is not None else self._hosts
        snaps = [h.snapshot() for h in chosen]
        return {
            "now": time.monotonic(),
            "port": self._port,
            "totals": {
                "robots_requests": sum(s.robots_requests for s in snaps),
                "robots_304": sum(s.robots_304 for s in snaps),
                "redirect_hops": sum(s.redirect_hops for s in snaps),
                "page_requests": sum(s.page_requests for s in snaps),
                "disallowed_page_requests": sum(s.disallowed_page_requests for s in snaps),
                "other_requests": sum(s.other_requests for s in snaps),
            },
            "hosts": {s.host: s.to_json(times=times, log=log) for s in snaps},
        }

    def reset(self) -> None:
        """Forget every record (plans stay)."""
        for h in self._hosts:
            h.clear()

    # -- request handling ------------------------------------------------

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        # When the request's bytes reached this process, not when its handler got
        # to run: under a burst for many hosts the handler can start much later,
        # which would show the client's spacing shrunk.
        protocol = request.protocol
        now = getattr(protocol, "arrived", None) or time.monotonic()
        transport = request.transport
        local = transport.get_extra_info("sockname") if transport is not None else None
        host = self._by_addr.get(local[0]) if local else None
        path = request.path
        if host is None:
            return self._control(request, path)
        if path.startswith(("/page/", "/private/")):
            return await self._page(host, path, now)
        if path == "/robots.txt" or path.startswith(("/r/", "/loop/")):
            return await self._robots(host, request, path, now)
        host.other += 1
        return web.Response(status=404, text="not found")

    async def _page(self, host: _Host, path: str, now: float) -> web.StreamResponse:
        plan = host.plan
        number = path.rpartition("/")[2]
        if not (number.isascii() and number.isdigit()):
            host.other += 1
            return web.Response(status=404, text="not found")
        status = 200
        if plan.page_status is not None and (
            plan.page_status_times is None or host.page_status_served < plan.page_status_times
        ):
            status = plan.page_status
            host.page_status_served += 1
        if plan.rate_limit is not None and status == 200:
            if now - host.last_let_through < plan.rate_limit:
                status = 429  # over the server's rate: no Retry-After, as many servers do
            else:
                host.last_let_through = now
        host.page_times.append(now)
        host.page_log.append(PageRecord(now, path, status))
        host.pages_seen.add(path)
        if is_disallowed(plan.scenario, path):
            host.disallowed += 1
        host.in_flight += 1
        host.max_in_flight = max(host.max_in_flight, host.in_flight)
        try:
            if plan.page_delay > 0:
                await asyncio.sleep(plan.page_delay)
        finally:
            host.in_flight -= 1
        if status != 200:
            headers = {}
            if plan.page_retry_after is not None:
                headers["Retry-After"] = str(plan.page_retry_after)
            return web.Response(status=status, headers=headers, text="try later")
        body = _page_body(path, int(number), plan.pages, host.scaled)
        return web.Response(body=body, headers=_HTML_HEADERS)

    async def _robots(
        self, host: _Host, request: web.BaseRequest, path: str, now: float
    ) -> web.StreamResponse:
        plan = host.plan
        scenario = plan.scenario
        is_robots = path == "/robots.txt"
        if is_robots:
            host.robots_times.append(now)
        else:
            if scenario == "redirect_chain":
                known = path in _CHAIN or path == _CHAIN_END
            else:
                known = scenario == "redirect_loop" and path in _LOOP
            if not known:
                host.other += 1
                return web.Response(status=404, text="not found")
            host.redirect_hops += 1

        response = await self._robots_response(host, request, path, scenario)
        status = 0 if response is None else response.status
        headers = request.headers
        host.robots_log.append(
            RobotsRecord(
                time=now,
                path=path,
                status=status,
                user_agent=headers.get("User-Agent"),
                from_=headers.get("From"),
                if_none_match=headers.get("If-None-Match"),
                if_modified_since=headers.get("If-Modified-Since"),
            )
        )
        if response is None:
            # A response object is still needed; it is never sent on the aborted transport.
            return web.Response(status=500)
        return response

    async def _robots_response(
        self, host: _Host, request: web.BaseRequest, path: str, scenario: str
    ) -> web.Response | None:
        plan = host.plan
        if scenario == "reset":
            self._reset_connection(request)
            return None
        if scenario == "redirect_chain" and path in _CHAIN:
            return self._redirect(_CHAIN[path], host)
        if scenario == "redirect_loop":
            return self._redirect(_LOOP[path], host)
        if scenario == "404":
            return web.Response(status=404, text="no robots.txt here")
        if scenario == "500":
            return web.Response(status=500, text="internal error")
        if scenario == "503_retry":
            retry = plan.retry_after if plan.retry_after is not None else 1
            return web.Response(status=503, headers={"Retry-After": str(retry)}, text="busy")
        if scenario == "429":
            headers = {}
            if plan.retry_after is not None:
                headers["Retry-After"] = str(plan.retry_after)
            return web.Response(status=429, headers=headers, text="slow down")
        if scenario == "slow":
            await asyncio.sleep(plan.slow_seconds)
        return self._robots_ok(host, request)

    def _robots_ok(self, host: _Host, request: web.BaseRequest) -> web.Response:
        body = host.robots_body
        assert body is not None
        headers = request.headers
        inm = headers.get("If-None-Match")
        if inm is not None:
            # If-None-Match wins over If-Modified-Since (RFC 9110 §13.2.2).
            not_modified = _etag_matches(inm, host.ok_headers["ETag"])
        else:
            ims = headers.get("If-Modified-Since")
            not_modified = ims is not None and _not_modified_since(ims, self._last_modified_epoch)
        if not_modified:
            host.robots_304 += 1
            reply = {k: v for k, v in host.ok_headers.items() if k != "Content-Type"}
            return web.Response(status=304, headers=reply)
        return web.Response(body=body, headers=host.ok_headers)

    def _redirect(self, target: str, host: _Host) -> web.Response:
        # Absolute Location on the same host, so any client resolves it the same way.
        location = f"http://{host.addr}:{self.port}{target}"
        return web.Response(status=301, headers={"Location": location}, text="moved")

    @staticmethod
    def _reset_connection(request: web.BaseRequest) -> None:
        # SO_LINGER 0 then close makes the kernel send RST: the client sees a
        # connection error, never an HTTP status.
        transport = request.transport
        if transport is None:
            return
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
        transport.abort()

    def _control(self, request: web.BaseRequest, path: str) -> web.Response:
        if path == "/__stats":
            if request.method != "GET":
                return web.Response(status=405, headers={"Allow": "GET"})
            query = request.query
            host = query.get("host")
            if host is not None and host not in self._by_addr:
                return web.Response(status=404, text=f"unknown host {host}")
            data = self.stats_json(
                times=query.get("times", "1") != "0",
                log=query.get("log", "1") != "0",
                host=host,
            )
            return web.json_response(data)
        if path == "/__reset":
            if request.method != "POST":
                return web.Response(status=405, headers={"Allow": "POST"})
            self.reset()
            return web.json_response({"ok": True})
        if path == "/__info":
            return web.json_response(self.info())
        return web.Response(status=404, text="unknown control path")


def mixed_plans(
    n_hosts: int,
    mix: Mapping[str, float],
    seed: int = 0,
    *,
    template: HostPlan | None = None,
    overrides: Mapping[int, HostPlan] | None = None,
) -> list[HostPlan]:
    """Deterministic plans for ``n_hosts`` hosts following the weights in ``mix``."""
    if n_hosts < 0:
        raise ValueError("n_hosts must be >= 0")
    if not mix or any(w < 0 for w in mix.values()) or sum(mix.values()) <= 0:
        raise ValueError("mix needs non-negative weights with a positive sum")
    for name in mix:
        if name not in SCENARIOS:
            raise ValueError(f"unknown scenario {name!r}")
    total = sum(mix.values())
    shares = {name: n_hosts * w / total for name, w in mix.items()}
    counts = {name: int(share) for name, share in shares.items()}
    # Largest remainder: hand leftover hosts to the biggest fractional parts.
    leftovers = sorted(shares, key=lambda n: (counts[n] - shares[n], list(mix).index(n)))
    for name in leftovers[: n_hosts - sum(counts.values())]:
        counts[name] += 1
    scenarios = [name for name in mix for _ in range(counts[name])]
    random.Random(seed).shuffle(scenarios)
    base = template or HostPlan()
    plans = [dataclasses.replace(base, scenario=s) for s in scenarios]
    for index, plan in (overrides or {}).items():
        plans[index] = plan
    return plans


def _parse_mix(text: str) -> dict[str, float]:
    mix: dict[str, float] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        name, sep, weight = part.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"bad mix entry {part!r} (want name=weight)")
        try:
            mix[name.strip()] = float(weight)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"bad weight in {part!r}") from exc
    return mix


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Serve many robots.txt scenarios on loopback hosts sharing one port."
    )
    parser.add_argument("--hosts", type=int, default=100, help="number of hosts (default 100)")
    parser.add_argument(
        "--mix",
        type=_parse_mix,
        default={"partial": 1.0},
        help="scenario weights, e.g. partial=0.5,allow=0.3,crawl_delay=0.2",
    )
    parser.add_argument(
        "--scenario-all", action="store_true", help="one host per scenario (ignores --hosts/--mix)"
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="INDEX=SCENARIO",
        help="force host INDEX to SCENARIO (repeatable)",
    )
    parser.add_argument("--seed", type=int, default=0, help="shuffle seed for the mix")
    parser.add_argument("--port", type=int, default=0, help="shared port (0: pick a free one)")
    parser.add_argument("--control-host", default="127.0.0.1")
    parser.add_argument(
        "--duration", type=float, default=600.0, help="stop after this many seconds (default 600)"
    )
    parser.add_argument("--pages", type=int, default=100, help="pages per host (for links)")
    parser.add_argument("--crawl-delay", type=float, default=0.2)
    parser.add_argument("--slow-seconds", type=float, default=2.0)
    parser.add_argument("--retry-after", type=int, default=None)
    parser.add_argument("--page-delay", type=float, default=0.0)
    parser.add_argument("--max-age", type=int, default=None)
    parser.add_argument(
        "--plans",
        metavar="FILE",
        help="host plans as a JSON list of HostPlan fields ('-': standard input); "
        "replaces --hosts/--mix and the per-plan options",
    )
    parser.add_argument("--backlog", type=int, default=512, help="listen backlog per host")
    parser.add_argument(
        "--extra-ports", type=int, default=0, help="more ports serving the same hosts"
    )
    return parser


def _plans_from_args(args: argparse.Namespace) -> list[HostPlan]:
    if args.plans:
        with open(args.plans) if args.plans != "-" else contextlib.nullcontext(sys.stdin) as f:
            return [HostPlan(**fields) for fields in json.load(f)]
    template = HostPlan(
        pages=args.pages,
        crawl_delay=args.crawl_delay,
        slow_seconds=args.slow_seconds,
        retry_after=args.retry_after,
        page_delay=args.page_delay,
        max_age=args.max_age,
    )
    if args.scenario_all:
        plans = [dataclasses.replace(template, scenario=s) for s in SCENARIOS]
    else:
        plans = mixed_plans(args.hosts, args.mix, args.seed, template=template)
    for item in args.override:
        index, _, scenario = item.partition("=")
        plans[int(index)] = dataclasses.replace(template, scenario=scenario)
    return plans


async def _serve(server: BenchServer, duration: float) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        print(json.dumps(server.info()), flush=True)
        waiter = asyncio.ensure_future(stop.wait())
        await asyncio.wait({waiter}, timeout=duration)
        waiter.cancel()


async def stop_process(proc: asyncio.subprocess.Process, grace: float = 10) -> None:
    """Terminate ``proc`` if it still runs, kill it after ``grace`` seconds, and reap it."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()


class ServerProcess:
    """This server in a child process (a core of its own), and a client for its
    control endpoints.  Benchmarks use it so that client and server do not share
    one event loop.

    >>> async with ServerProcess() as server:                    # doctest: +SKIP
    ...     await server.start(["--hosts", "100", "--mix", "partial=1"])
    ...     server.base_urls[0], (await server.stats())["totals"]
    """

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.info: dict[str, Any] = {}
        self._session: aiohttp.ClientSession | None = None

    async def start(
        self,
        args: Sequence[str] = (),
        *,
        plans: Sequence[HostPlan] | None = None,
        duration: float = 900.0,
    ) -> dict[str, Any]:
        """Start ``server.py ARGS`` (or with ``plans``); returns its ready line."""
        cmd = [sys.executable, str(Path(__file__).resolve()), "--duration", str(duration), *args]
        if plans is not None:
            cmd += ["--plans", "-"]
        self.proc = await asyncio.create_subprocess_exec(
            *cmd,
            stdin=asyncio.subprocess.PIPE if plans is not None else None,
            stdout=asyncio.subprocess.PIPE,
            limit=1 << 24,  # the ready line lists every host address
        )
        if plans is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps([dataclasses.asdict(p) for p in plans]).encode())
            await self.proc.stdin.drain()
            self.proc.stdin.close()
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 120)
        if not line:
            raise RuntimeError("the loopback server did not start")
        self.info = json.loads(line)
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))
        return self.info

    @property
    def base_urls(self) -> list[str]:
        return [f"http://{h}:{self.info['port']}" for h in self.info["hosts"]]

    async def stats(self, times: bool = True) -> dict[str, Any]:
        """The server's records (``/__stats``), without the request logs."""
        assert self._session is not None
        url = self.info["control"] + ("?log=0" if times else "?log=0&times=0")
        async with self._session.get(url) as resp:
            resp.raise_for_status()
            data: dict[str, Any] = await resp.json()
            return data

    async def totals(self) -> dict[str, int]:
        """The server's request counts so far (all hosts)."""
        return dict((await self.stats(times=False))["totals"])

    async def reset(self) -> None:
        assert self._session is not None
        url = self.info["control"].replace("/__stats", "/__reset")
        async with self._session.post(url) as resp:
            resp.raise_for_status()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        proc, self.proc = self.proc, None
        if proc is None:
            return
        await stop_process(proc)
        if proc.stdout is not None:
            await proc.stdout.read()

    async def __aenter__(self) -> ServerProcess:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point: serve until SIGINT/SIGTERM or ``--duration``."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        plans = _plans_from_args(args)
    except (ValueError, IndexError) as exc:
        parser.error(str(exc))
    server = BenchServer(
        plans,
        port=args.port,
        control_host=args.control_host,
        backlog=args.backlog,
        extra_ports=args.extra_ports,
    )
    try:
        asyncio.run(_serve(server, args.duration))
    except OSError as exc:  # typically the port is taken on some address
        print(f"server.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
