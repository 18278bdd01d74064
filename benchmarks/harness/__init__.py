"""What the benchmarks share: the progress line, child processes, statistics, the report.

Each benchmark under ``benchmarks/`` measures one job and prints its figures, its command line
and where its JSON went; the loopback server and the polite-crawl checks come from
:mod:`testbed`, which the tests use too.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[2]
#: The shared robots.txt corpus beside the checkout.
CORPUS = ROOT.parent / "shared" / "corpus" / "robots"
RESULTS = ROOT / "benchmarks" / "results"


def connector(keepalive_timeout: float | None = 15.0) -> aiohttp.TCPConnector:
    """The same settings for every contender; no total cap (the gate's own default).
    ``keepalive_timeout``: seconds an idle connection is kept (aiohttp's default; None: for
    good)."""
    return aiohttp.TCPConnector(limit=0, limit_per_host=0, keepalive_timeout=keepalive_timeout)
