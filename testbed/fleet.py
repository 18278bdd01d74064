"""A fleet of worker processes sharing one politeness budget through Redis.

One worker process::

    python testbed/fleet.py --redis URL --prefix P --urls-file F [--cluster]
                            [--tasks 2000] [--delay 0.2] [--out outcomes.json]

one ``RobotGate`` on a ``RedisStore``, ``--tasks`` concurrent tasks over the
URLs of the file (one a line).  With ``--wait`` it opens the gate, prints
``{"ready": ...}`` and starts when a line arrives on stdin.  It prints one
JSON summary line; ``--out`` gets the outcome of every URL (``fetched``,
``status N``, ``disallowed``, ``store_error: ...``, ``error: ...``).

:class:`Fleet` starts such workers together, :class:`FleetChecks` reads the loopback server's
records of their crawl.  ``tests/e2e/test_fleet.py`` and ``benchmarks/fleet.py`` use both.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import logging
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `testbed.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testbed.children import child_env

ROOT = Path(__file__).resolve().parents[1]
FLEET_PY = Path(__file__).resolve()
USER_AGENT = "RobotGateFleet/1.0 (+https://example.invalid/fleet)"
#: Bound on a worker's startup (imports, connecting to Redis), on a busy machine too.
READY_TIMEOUT = 120.0
#: How many times its no-progress timeout a fleet's run may last in all (see
#: :meth:`Fleet.results`).
PROGRESS_STRETCH = 8


# -- the worker -----------------------------------------------------------------


def _classify(exc: BaseException) -> str:
    from robotgate import StoreError

    if isinstance(exc, StoreError):
        return f"store_error: {exc}"
    return f"error: {type(exc).__name__}: {exc}"


async def run_worker(args: argparse.Namespace) -> dict[str, Any]:
    """One worker: a gate on a RedisStore, ``args.tasks`` tasks over the URL file."""
    from robotgate import Disallowed, FetchPolicy, Pacing, RobotGate, StoreError
    from robotgate.store.redis import RedisStore

    urls = [line.strip() for line in Path(args.urls_file).read_text().splitlines()]
    urls = [url for url in urls if url]
    store = RedisStore(args.redis, prefix=args.prefix, cluster=args.cluster,
                       unavailable_timeout=args.unavailable_timeout)
    gate = RobotGate(USER_AGENT, delay=args.delay, store=store,
                     policy=FetchPolicy(timeout=args.robots_timeout),
                     pacing=Pacing(margin=args.pacing_margin))
    outcomes: dict[str, str] = {}
    reported: set[str] = set()
    loop = asyncio.get_running_loop()
    close_error = ""
    await gate.open()
    try:
        if args.wait:
            print(json.dumps({"ready": os.getpid()}), flush=True)
            # Nothing else runs yet: a blocking read keeps the start line simple.
            if not sys.stdin.readline():
                return {"aborted": True}
        todo = iter(urls)
        started = loop.time()
        wall_started = time.time()

        async def task() -> None:
            for url in todo:
                try:
                    async with gate.fetch(url) as resp:
                        outcome = "fetched" if resp.status == 200 else f"status {resp.status}"
                except Disallowed:
                    outcome = "disallowed"
                except Exception as exc:  # every other answer is recorded, none is lost
                    outcome = _classify(exc)
                    if outcome.startswith("error") and outcome not in reported:
                        # The first of each kind with its traceback, on stderr (the log).
                        reported.add(outcome)
                        traceback.print_exception(exc, file=sys.stderr)
                outcomes[url] = outcome

        await asyncio.gather(*(task() for _ in range(max(1, min(args.tasks, len(urls))))))
        elapsed = loop.time() - started
        stats = dict(gate.stats)
    finally:
        try:
            await gate.close()
        except StoreError as exc:
            # The last host states could not be written (Redis still away): say so.
            close_error = str(exc)
    # Closed: the last host states are flushed, and counted.
    counts: dict[str, int] = {}
    for outcome in outcomes.values():
        kind = outcome.split(":", 1)[0]
        counts[kind] = counts.get(kind, 0) + 1
    messages = sorted({o for o in outcomes.values() if ":" in o})[:5]
    if args.out:
        Path(args.out).write_text(json.dumps(outcomes))
    return {
        "pid": os.getpid(),
        "urls": len(urls),
        "answered": len(outcomes),
        "fetched": counts.get("fetched", 0),
        "disallowed": counts.get("disallowed", 0),
        "other_status": sum(n for k, n in counts.items() if k.startswith("status")),
        "store_errors": counts.get("store_error", 0),
        "errors": counts.get("error", 0),
        "messages": messages,
        "round_trips": store.round_trips,
        "close_error": close_error,
        "robots_requests": stats["robots_requests"],
        "late_slots": stats.get("late_slots", 0),
        "started_at": wall_started,
        "elapsed": elapsed,
    }


def _worker_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="testbed/fleet.py",
                                 description="One fleet worker: a RobotGate on a RedisStore.")
    ap.add_argument("--redis", required=True, help="Redis URL (any node, with --cluster)")
    ap.add_argument("--cluster", action="store_true", help="the URL names a Redis Cluster node")
    ap.add_argument("--prefix", required=True, help="key prefix shared by the fleet")
    ap.add_argument("--urls-file", required=True, help="URLs to fetch, one a line")
    ap.add_argument("--tasks", type=int, default=2000, help="concurrent tasks (default 2000)")
    ap.add_argument("--delay", type=float, default=0.2, help="seconds between requests per host")
    ap.add_argument("--robots-timeout", type=float, default=30.0,
                    help="FetchPolicy timeout; the fetch lock lives twice that plus 5 s")
    ap.add_argument("--pacing-margin", type=float, default=0.01)
    ap.add_argument("--unavailable-timeout", type=float, default=10.0,
                    help="seconds a Redis call waits for an unreachable Redis")
    ap.add_argument("--nice", type=int, default=0, help="lower this process's CPU priority")
    ap.add_argument("--out", help="write every URL's outcome here (JSON)")
    ap.add_argument("--wait", action="store_true",
                    help='print {"ready": pid} once connected, start on a line on stdin')
    return ap


#: Set in a worker's environment: robotgate's robots.txt log (DEBUG) goes to its stderr (its
#: log file), each line stamped with the monotonic clock the loopback server's records use.
DEBUG_ENV = "ROBOTGATE_FLEET_DEBUG"


def _debug_log() -> None:
    class Monotonic(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            record.mono = time.monotonic()
            return True

    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(Monotonic())
    handler.setFormatter(logging.Formatter("%(mono).3f %(process)d %(name)s %(message)s"))
    robots = logging.getLogger("robotgate.robots")
    robots.addHandler(handler)
    robots.setLevel(logging.DEBUG)


def main(argv: Sequence[str] | None = None) -> int:
    args = _worker_parser().parse_args(argv)
    if os.environ.get(DEBUG_ENV):
        _debug_log()
    if args.nice:
        # Below the loopback server and Redis: on a shared machine, the server's
        # records then show when requests were sent, not when it got the CPU.
        os.nice(args.nice)
    summary = asyncio.run(run_worker(args))
    print(json.dumps(summary), flush=True)
    return 0


# -- driving a fleet of workers ---------------------------------------------------


def split_urls(per_host: Sequence[Sequence[str]], workers: int) -> list[list[str]]:
    """Worker ``w`` gets page ``i`` of every host when ``i mod workers == w``.

    Each list goes page by page across the hosts, so every worker works on
    every origin at once and the workers compete for the same origins.
    """
    lists: list[list[str]] = [[] for _ in range(workers)]
    longest = max((len(urls) for urls in per_host), default=0)
    for i in range(longest):
        for urls in per_host:
            if i < len(urls):
                lists[i % workers].append(urls[i])
    return lists


@dataclass
class Fleet:
    """Worker processes started together: ``async with Fleet(...) as fleet``.

    Entering starts every worker with ``--wait`` and waits until each is
    connected; :meth:`go` starts them all at once; :meth:`results` waits for
    their summaries.  Leaving kills whatever still runs and reaps it.
    """

    redis_url: str
    prefix: str
    url_lists: Sequence[Sequence[str]]
    directory: Path
    tasks: int = 2000
    delay: float = 0.2
    #: ``redis_url`` names a node of a Redis Cluster.
    cluster: bool = False
    options: Sequence[str] = ()
    #: Extra options per worker (worker ``i`` gets ``worker_options[i]``).
    worker_options: Sequence[Sequence[str]] = ()
    procs: list[asyncio.subprocess.Process] = field(default_factory=list, init=False)
    _runs: list[asyncio.Future[tuple[bytes, bytes]]] = field(default_factory=list, init=False)

    def out_path(self, index: int) -> Path:
        return self.directory / f"worker{index}.outcomes.json"

    def log_path(self, index: int) -> Path:
        return self.directory / f"worker{index}.stderr"

    async def __aenter__(self) -> Fleet:
        try:
            for index, urls in enumerate(self.url_lists):
                urls_file = self.directory / f"worker{index}.urls"
                urls_file.write_text("".join(url + "\n" for url in urls))
                await self.spawn(index, urls_file)
            for index, proc in enumerate(self.procs):
                assert proc.stdout is not None
                line = await asyncio.wait_for(proc.stdout.readline(), READY_TIMEOUT)
                if not line.startswith(b'{"ready"'):
                    await proc.wait()
                    raise RuntimeError(f"worker {index} did not start: {line!r}\n"
                                       + self.log_path(index).read_text(errors="replace"))
        except BaseException:
            await self.close()
            raise
        return self

    async def spawn(self, index: int, urls_file: Path) -> asyncio.subprocess.Process:
        command = [
            sys.executable, str(FLEET_PY), "--wait",
            "--redis", self.redis_url, "--prefix", self.prefix, "--urls-file", str(urls_file),
            "--tasks", str(self.tasks), "--delay", str(self.delay),
            "--out", str(self.out_path(index)), *(["--cluster"] if self.cluster else []),
            *self.options,
            *(self.worker_options[index] if index < len(self.worker_options) else ()),
        ]
        with self.log_path(index).open("wb") as log:
            proc = await asyncio.create_subprocess_exec(
                *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=log, env=child_env(), cwd=str(ROOT),
            )
        self.procs.append(proc)
        return proc

    def go(self) -> None:
        """Start every worker's crawl (their summaries are collected meanwhile)."""
        self._runs = [asyncio.ensure_future(proc.communicate(b"go\n")) for proc in self.procs]

    async def results(self, timeout: float,
                      progress: Callable[[], int] | None = None) -> list[dict[str, Any]]:
        """Every worker's summary; raises if one failed or ``timeout`` passes.

        With ``progress`` (a count that grows as the crawl goes on: the requests the
        server received), ``timeout`` is how long the fleet may go without any: a
        machine a few times busier than a quiet one (6 CPU-bound processes beside
        it) crawls as well, only slower.  Bounded all the same, at
        ``PROGRESS_STRETCH`` times ``timeout``."""
        if not self._runs:
            self.go()
        started = time.monotonic()
        limit = timeout if progress is None else timeout * PROGRESS_STRETCH
        last_seen, last_change = (progress() if progress else 0), started
        pending: set[asyncio.Future[tuple[bytes, bytes]]] = set(self._runs)
        while pending:
            now = time.monotonic()
            if progress is not None:
                seen = progress()
                if seen != last_seen:
                    last_seen, last_change = seen, now
            idle = now - last_change
            if idle >= timeout or now - started >= limit:
                why = (f"{idle:.0f} s without progress ({last_seen} so far)"
                       if progress is not None and idle >= timeout else
                       f"{now - started:.0f} s")
                raise TimeoutError(f"{len(pending)} of {len(self._runs)} workers still "
                                   f"running after {why}")
            wait = min(1.0, timeout - idle, limit - (now - started))
            _, pending = await asyncio.wait(pending, timeout=wait)
        summaries = []
        for index, (proc, run) in enumerate(zip(self.procs, self._runs, strict=True)):
            out, _ = run.result()
            await proc.wait()
            lines = out.decode(errors="replace").strip().splitlines()
            if proc.returncode != 0 or not lines:
                raise RuntimeError(f"worker {index} exited with {proc.returncode}:\n"
                                   + self.log_path(index).read_text(errors="replace")[-3000:])
            summaries.append(json.loads(lines[-1]))
        return summaries

    def outcomes(self) -> dict[str, str]:
        """Every URL's outcome, from all workers' ``--out`` files."""
        merged: dict[str, str] = {}
        for index in range(len(self.procs)):
            merged.update(json.loads(self.out_path(index).read_text()))
        return merged

    async def close(self) -> None:
        """Kill the workers still running, wait for them and close their pipes."""
        for proc in self.procs:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
        for run in self._runs:
            if not run.done():
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(run, 10)
        for index, proc in enumerate(self.procs):
            if index >= len(self._runs):
                # Never started: read what is left so the pipes close.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(proc.communicate(), 10)
            await proc.wait()
        for run in self._runs:
            if run.done() and not run.cancelled():
                run.exception()  # retrieved: no "never retrieved" report
        self._runs = []

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


# -- checking the server's records ----------------------------------------------------


def pacing_violations(page_times: Iterable[float], interval: float) -> tuple[int, float | None]:
    """(gaps below ``interval``, smallest gap) between one host's request arrivals
    (its pages', or with its robots.txt requests among them)."""
    gaps = [b - a for a, b in itertools.pairwise(sorted(page_times))]
    return sum(g < interval for g in gaps), (min(gaps) if gaps else None)


@dataclass
class FleetChecks:
    """The fleet's promises, from the server's per-host records (``/__stats``: the
    kernel's receive times).  ``violations`` and ``min_gap`` are between page
    requests; ``request_violations`` and ``request_min_gap`` count robots.txt
    requests in too (a robots.txt request is a request to the server)."""

    robots_min: int
    robots_max: int
    disallowed_at_server: int
    violations: int
    min_gap: float | None
    page_requests: int
    request_violations: int = 0
    request_min_gap: float | None = None

    @classmethod
    def of(cls, stats: dict[str, Any], intervals: dict[str, float]) -> FleetChecks:
        """``stats`` as ``/__stats`` gives it; ``intervals`` the least gap per host."""
        hosts = stats["hosts"]
        robots = [rec["robots_requests"] for rec in hosts.values()]
        violations = every_violation = 0
        gaps: list[float] = []
        every_gap: list[float] = []
        for addr, rec in hosts.items():
            pages = rec.get("page_times") or []
            bad, smallest = pacing_violations(pages, intervals[addr])
            violations += bad
            if smallest is not None:
                gaps.append(smallest)
            bad, smallest = pacing_violations([*pages, *(rec.get("robots_times") or [])],
                                              intervals[addr])
            every_violation += bad
            if smallest is not None:
                every_gap.append(smallest)
        return cls(
            robots_min=min(robots, default=0),
            robots_max=max(robots, default=0),
            disallowed_at_server=sum(rec["disallowed_page_requests"] for rec in hosts.values()),
            violations=violations,
            min_gap=min(gaps) if gaps else None,
            page_requests=sum(rec["page_requests"] for rec in hosts.values()),
            request_violations=every_violation,
            request_min_gap=min(every_gap) if every_gap else None,
        )


if __name__ == "__main__":
    sys.exit(main())
