"""``robotgate crawls``: the named crawls a store keeps (a SQLite file's, or those a fleet
shares in Redis), their counts; drop one."""

from __future__ import annotations

import argparse
import asyncio

from ..store.base import Store, StoreError, crawl_store
from ..store.crawl_state import CrawlCounts, NamedCrawlsUnsupported
from .args import EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError, error, say


def counts_text(name: str, counts: CrawlCounts) -> str:
    return (f"{name}: {counts.queued} queued, {counts.in_flight} in flight, {counts.done} done,"
            f" {counts.skipped} skipped, {counts.failed} failed")


def run_crawls(args: argparse.Namespace) -> int:
    """The ``crawls`` command; returns the exit status."""
    from .fetch import make_store

    if args.drop and args.name is None:
        raise UsageError("--drop needs the NAME of the crawl to forget")
    store = make_store(args.store)
    try:
        return asyncio.run(_crawls(store, args.name, args.drop))
    except NamedCrawlsUnsupported as exc:
        raise UsageError(str(exc)) from None


async def _crawls(any_store: Store, name: str | None, drop: bool) -> int:
    store = crawl_store(any_store)  # NamedCrawlsUnsupported where it keeps none
    try:
        async with any_store:
            names = await store.crawl_names()
            if name is not None and name not in names:
                error(f"no crawl named {name!r} in this store"
                      f" ({', '.join(names) if names else 'it keeps none'})")
                return EXIT_FAILED
            if drop:
                await store.drop_crawl(str(name))
                print(f"dropped {name}")
                return EXIT_OK
            if not names:  # said on stderr: the listing on stdout stays empty
                say("this store keeps no named crawls (robotgate fetch --crawl NAME makes one)")
            for each in [name] if name is not None else names:
                print(counts_text(str(each), await store.crawl_state(str(each)).counts()))
    except StoreError as exc:
        error(f"{exc} (or pick another store with --store)")
        return EXIT_USAGE
    return EXIT_OK
