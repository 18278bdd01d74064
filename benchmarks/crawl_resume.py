"""Kill -9 at random moments of a named SQLite crawl, resuming each time.

    python benchmarks/crawl_resume.py [--pages 20000] [--kills 10] [--concurrency 16]
        [--hosts 200] [--latency 0.01] [--seed 0] [--json FILE]

The crawl (``testbed/crawl_resume.py``) starts from one URL; every other page
is a link a page gave (page i links to 2i+1 and 2i+2), so a lost link loses a
subtree.  A child process crawls, is sent SIGKILL at a random moment, and is
started again, ``kills`` times (each kill once the requests made reach a random
count, so that every kill falls mid-crawl); the last run goes to the end.  Each request is
logged as it starts, so the figures count what the servers would have seen:
every page fetched, the pages fetched again after each kill (at most
``concurrency``: those in flight), and the pages the store has as done.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.report import write_json
from testbed.crawl_resume import kill_and_resume


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=20_000)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--latency", type=float, default=0.01,
                    help="seconds each request takes (default 0.01)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="600 pages, 3 kills")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    if args.quick:
        args.pages, args.kills, args.hosts = 600, 3, 20
    with tempfile.TemporaryDirectory() as tmp:
        figures = kill_and_resume(f"{tmp}/crawl.sqlite3", f"{tmp}/requests.log",
                                  pages=args.pages, hosts=args.hosts,
                                  concurrency=args.concurrency, kills=args.kills,
                                  latency=args.latency, seed=args.seed, timeout=1800)
    ok = (figures.fetched == figures.pages == figures.done
          and figures.most_duplicates_per_kill <= figures.concurrency)
    print(f"{figures.pages:,}-page named SQLite crawl, {figures.kills} kill -9s, "
          f"concurrency {figures.concurrency} ({figures.seconds:.1f} s):\n"
          f"  pages fetched       {figures.fetched:,} of {figures.pages:,} "
          f"(done in the store: {figures.done:,})\n"
          f"  requests            {figures.requests:,} ({figures.duplicates} again)\n"
          f"  again, per kill     {figures.duplicates_per_kill} "
          f"(most {figures.most_duplicates_per_kill}; bound {figures.concurrency})\n"
          f"  {'every URL fetched, none lost, within the bound' if ok else 'FAILED'}")
    if args.json:
        write_json(args.json, asdict(figures))
    return 0 if ok else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
