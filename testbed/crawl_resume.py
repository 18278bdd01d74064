"""A named SQLite crawl killed with SIGKILL at random moments and resumed each time.

The site is a tree of ``pages`` URLs over ``hosts`` hosts: page ``i`` links to
pages ``2i+1`` and ``2i+2``, so all but the first are discovered links and a
lost link would lose its whole subtree.  Each request is appended to a log file
as it starts (a write the kernel keeps when the process is killed), so the
driver counts the requests made across every run.

``python -m testbed.crawl_resume run DB LOG PAGES HOSTS CONCURRENCY LATENCY`` crawls
until done (or killed); :func:`kill_and_resume` drives it.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from testbed.crawl_gate import PlainCrawlGate

NAME = "resume"


def page_url(i: int, hosts: int) -> str:
    return f"http://h{i % hosts}.example/p{i}"


class _Fetch:
    def __init__(self, gate: _TreeGate, url: str) -> None:
        self.gate = gate
        self.url = url
        self.headers: dict[str, str] = {}

    async def read(self) -> bytes:
        return b""

    async def __aenter__(self) -> Any:
        os.write(self.gate.log, (self.url + "\n").encode())
        await asyncio.sleep(self.gate.latency)
        return self

    async def __aexit__(self, t: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        return None

    status = 200


class _TreeGate(PlainCrawlGate):
    """Every URL allowed, no pacing; each request logged as it starts."""

    max_per_host = 4

    def __init__(self, log: int, latency: float) -> None:
        self.log = log
        self.latency = latency

    def pace_key(self, url: str) -> str:
        return url.split("/")[2]

    async def allowed(self, url: str) -> bool:
        return True

    async def decide(self, url: str) -> Any:
        raise AssertionError("never asked: every URL is allowed")

    def fetch(self, url: str) -> _Fetch:
        return _Fetch(self, url)


async def _run(db: str, log_path: str, pages: int, hosts: int, concurrency: int,
               latency: float) -> None:
    from robotgate.crawl import Frontier
    from robotgate.store.sqlite import SQLiteStore

    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def handler(url: str, resp: Any) -> list[str]:
        i = int(url.rsplit("/p", 1)[1])
        return [page_url(j, hosts) for j in (2 * i + 1, 2 * i + 2) if j < pages]

    async with SQLiteStore(db) as store:
        frontier = Frontier(_TreeGate(log, latency), [page_url(0, hosts)], handler,
                            concurrency=concurrency, scope="any",
                            state=store.crawl_state(NAME))
        await frontier.run()
    os.close(log)


@dataclass
class Figures:
    pages: int
    kills: int
    concurrency: int
    requests: int
    fetched: int
    duplicates: int
    most_duplicates_per_kill: int
    duplicates_per_kill: list[int]
    done: int
    seconds: float


def kill_and_resume(db: str, log: str, *, pages: int, hosts: int, concurrency: int,
                    kills: int, latency: float = 0.002, seed: int = 0,
                    timeout: float = 300.0) -> Figures:
    """Run the crawl, SIGKILL it at ``kills`` random moments (once the log holds a
    random number of requests, so that each falls mid-crawl), resume to the end."""
    rng = random.Random(seed)
    began = time.monotonic()
    command = [sys.executable, "-m", "testbed.crawl_resume", "run", db, log, str(pages),
               str(hosts), str(concurrency), str(latency)]
    ends: list[int] = []  # the log's length after each killed run

    def requests() -> list[str]:
        if not os.path.exists(log):
            return []
        with open(log, encoding="utf-8") as f:
            return [line for line in f.read().splitlines() if line]

    # Kill when the log reaches each of these request counts: every kill mid-crawl.
    targets = sorted(rng.sample(range(10, max(11, pages - 10)), kills))
    for target in targets:
        start = len(requests())
        proc = subprocess.Popen(command)
        deadline = time.monotonic() + timeout
        # At least a few requests of its own, and up to the target.
        while (len(requests()) < max(target, start + 5)) and proc.poll() is None:
            if time.monotonic() > deadline:
                proc.kill()
                raise TimeoutError("the crawl made no requests")
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        ends.append(len(requests()))
    subprocess.run(command, check=True, timeout=timeout)
    made = requests()
    counts = Counter(made)
    # A kill's duplicates: pages its run requested that a later run requested again.
    per_kill = []
    starts = [0, *ends]
    for k, end in enumerate(ends):
        cut = set(made[starts[k]:end])
        per_kill.append(len(cut & set(made[end:])))
    import sqlite3

    with sqlite3.connect(db) as conn:
        done = conn.execute("SELECT count(*) FROM crawl_urls WHERE crawl = ? AND state = 2",
                            (NAME,)).fetchone()[0]
    return Figures(pages=pages, kills=kills, concurrency=concurrency, requests=len(made),
                   fetched=len(counts), duplicates=len(made) - len(counts),
                   most_duplicates_per_kill=max(per_kill, default=0),
                   duplicates_per_kill=per_kill,
                   done=int(done), seconds=time.monotonic() - began)


if __name__ == "__main__":
    if len(sys.argv) == 8 and sys.argv[1] == "run":
        _, _, db_path, log_file, n_pages, n_hosts, n_concurrency, wait = sys.argv
        asyncio.run(_run(db_path, log_file, int(n_pages), int(n_hosts), int(n_concurrency),
                         float(wait)))
    else:
        sys.exit(__doc__)
