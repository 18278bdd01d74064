"""What the robots.txt requests do to httpx's connection pool: counts, not time.

    python benchmarks/httpx_pool.py [--hosts 100] [--pages 5] [--concurrency 32]
        [--json benchmarks/results/httpx_pool.json]

The run of ``httpx_instructions.py`` (the loopback server's hosts, one URL in five disallowed),
once for each contender, with httpcore's pool watched (its private methods wrapped to count,
nothing changed):

- *passes*: calls of the pool's ``_assign_requests_to_connections``, made on every request and
  every response closed;
- *idle seen*: the idle connections those passes went over, in all and those whose last
  request was a robots.txt.  httpcore 1.0.9's pass does work for each idle connection in
  proportion to the pool's size (it counts the connections by building a list of them) and asks
  each idle socket whether it is readable;
- *turns*: event-loop turns between a robots.txt response's close and the next request handed to
  that connection, and how many connections waited that many.

A robots.txt asked inline (*plain-robots*) is followed by the page on the same connection in
the same turn; one asked in a task of its own that askers await (*plain-flight*, the gate's
single flight) leaves its connection idle for a turn, while other requests' passes go over it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.clients_bench import USER_AGENT, httpx_run, run_options, served
from benchmarks.harness import RESULTS
from benchmarks.harness.report import command_line, write_json

KINDS = ("plain", "plain-robots", "plain-flight", "gate-cold")
ROBOTS_TXT = b"/robots.txt"


class PoolWatch:
    """Counts of one contender's run (see the module's text)."""

    def __init__(self) -> None:
        self.passes = 0
        self.idle_seen = 0
        self.idle_seen_after_robots = 0
        self.turn = 0
        # By origin: with more hosts than workers, a host has one connection at a time.
        self.last_target: dict[tuple[bytes, bytes, int], bytes] = {}
        self.robots_closed_at: dict[tuple[bytes, bytes, int], int] = {}
        self.turns_to_next_request: Counter[int] = Counter()

    def report(self) -> dict[str, Any]:
        return {"passes": self.passes, "idle_seen": self.idle_seen,
                "idle_seen_after_robots": self.idle_seen_after_robots,
                "turns_to_next_request": dict(sorted(self.turns_to_next_request.items()))}


def origin_of(connection: Any) -> tuple[bytes, bytes, int]:
    origin = connection._origin
    return origin.scheme, origin.host, origin.port


@contextmanager
def watching(watch: PoolWatch) -> Iterator[None]:
    """Wrap httpcore's pool pass, its connections' requests, its HTTP/1.1 closes, and the
    loop's turn."""
    import asyncio.base_events as base_events

    import httpcore
    from httpcore._async.http11 import AsyncHTTP11Connection

    wrapped: list[tuple[Any, str]] = [
        (httpcore.AsyncConnectionPool, "_assign_requests_to_connections"),
        (httpcore.AsyncHTTPConnection, "handle_async_request"),
        (AsyncHTTP11Connection, "_response_closed"),
        (base_events.BaseEventLoop, "_run_once")]
    originals = [getattr(owner, name) for owner, name in wrapped]
    assign, request, closed, run_once = originals

    def counted_assign(self: Any) -> Any:
        watch.passes += 1
        for connection in self._connections:
            if connection.is_idle():
                watch.idle_seen += 1
                if watch.last_target.get(origin_of(connection)) == ROBOTS_TXT:
                    watch.idle_seen_after_robots += 1
        return assign(self)

    async def counted_request(self: Any, req: Any) -> Any:
        waited_from = watch.robots_closed_at.pop(origin_of(self), None)
        if waited_from is not None:
            watch.turns_to_next_request[watch.turn - waited_from] += 1
        watch.last_target[origin_of(self)] = req.url.target
        return await request(self, req)

    async def counted_close(self: Any) -> None:
        await closed(self)
        if watch.last_target.get(origin_of(self)) == ROBOTS_TXT:
            watch.robots_closed_at[origin_of(self)] = watch.turn

    def counted_turn(self: Any) -> None:
        watch.turn += 1
        run_once(self)

    counting = [counted_assign, counted_request, counted_close, counted_turn]
    for (owner, name), counted in zip(wrapped, counting, strict=True):
        setattr(owner, name, counted)
    try:
        yield
    finally:
        for (owner, name), original in zip(wrapped, originals, strict=True):
            setattr(owner, name, original)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from robotgate import RobotGate

    report: dict[str, Any] = {"config": {k: v for k, v in vars(args).items() if k != "json"}}
    async with served(args.hosts, args.pages, args.concurrency) as (server, urls):
        for kind in KINDS:
            await server.reset()
            watch = PoolWatch()
            async with RobotGate(USER_AGENT, delay=0) as gate:
                with watching(watch):
                    note = await httpx_run(kind, urls, args.concurrency,
                                           gate if kind.startswith("gate") else None)
            totals = (await server.stats())["totals"]
            report[kind] = {**watch.report(), "note": note,
                            "robots_requests": totals["robots_requests"],
                            "page_requests": totals["page_requests"]}
    return report


def main(argv: list[str] | None = None) -> int:
    ap = run_options(__doc__, hosts=100, concurrency=32)
    ap.add_argument("--json", type=Path, default=RESULTS / "httpx_pool.json")
    ap.add_argument("--no-progress", action="store_true", help="(prints no progress anyway)")
    args = ap.parse_args(argv)
    report = asyncio.run(run(args))
    print(f"{'contender':<13} {'requests':>8} {'passes':>7} {'idle seen':>10} "
          f"{'after robots.txt':>17}  turns from a robots.txt to the next request")
    for kind in KINDS:
        row = report[kind]
        turns = ", ".join(f"{t}: {n}" for t, n in row["turns_to_next_request"].items())
        requests = row["robots_requests"] + row["page_requests"]
        print(f"{kind:<13} {requests:>8} {row['passes']:>7} {row['idle_seen']:>10} "
              f"{row['idle_seen_after_robots']:>17}  {turns or '-'}")
    write_json(args.json, report)
    print(f"\n{command_line(argv)}\n(JSON: {args.json})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
