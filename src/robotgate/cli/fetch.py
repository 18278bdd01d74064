"""``robotgate fetch``: URLs in, one JSON line per URL out, through ``gate.crawl``.

This module only wires things: arguments to a gate, sources to the crawl,
results to JSON lines, signals to a stop.  The scheduling lives in
:mod:`robotgate.crawl.frontier`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from ..agents import product_token
from ..crawl import CrawlResult, CrawlSummary
from ..policy import FetchPolicy
from ..policy.host_settings import HostSettings
from ..store.base import CrawlInUse, Store, StoreError
from ..store.crawl_state import NamedCrawlsUnsupported
from ..store.from_text import BadStoreText, store_from_text
from ..urls import scrub
from .args import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    UsageError,
    default_store_path,
    error,
    say,
    say_block,
)
from .bodies import PageHandler
from .inputs import (
    Source,
    UrlReader,
    close_sources,
    open_sources,
    sitemap_origins,
    with_sitemaps,
)
from .report import (
    LogLines,
    Output,
    OutputBroken,
    Progress,
    isatty,
    record_json,
    summary_text,
)
from .robots_log import RobotsLog


def run_fetch(args: argparse.Namespace) -> int:
    """The ``fetch`` command; returns the exit status."""
    if args.agent is None:
        raise UsageError(
            "fetch needs --agent NAME: the User-Agent that tells sites who is crawling, "
            "e.g. --agent 'MyBot/1.0 (+https://example.com/bot)'"
        )
    if not product_token(args.agent):
        raise UsageError(
            f"the agent {args.agent!r} has no product token for robots.txt groups to name: "
            "start it with letters, e.g. 'MyBot/1.0'"
        )
    robots_agent = getattr(args, "robots_agent", None)
    if robots_agent is not None and not product_token(robots_agent):
        raise UsageError(
            f"--robots-agent {robots_agent!r} has no product token for robots.txt groups to "
            "name: start it with letters, e.g. 'MyBot'"
        )
    args.sitemaps = sitemap_origins(args)
    sources = open_sources(args)
    out: IO[str] | None = None
    try:
        store = make_store(args.store)
        save_dir: Path | None = None
        if args.save_dir:
            save_dir = Path(args.save_dir)
            try:
                save_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise UsageError(
                    f"cannot create {args.save_dir!r}: {exc.strerror or exc}"
                ) from None
        if args.out and args.out != "-":
            try:
                out = open(args.out, "w", encoding="utf-8", newline="\n",  # noqa: SIM115
                           opener=owner_only)
            except OSError as exc:
                raise UsageError(f"cannot write {args.out!r}: {exc.strerror or exc}") from None
        run = _FetchRun(args, sources, store, out or sys.stdout, save_dir)
        return asyncio.run(run.main())
    finally:
        close_sources(sources)
        if out is not None:
            out.close()


def owner_only(path: str, flags: int) -> int:
    """Open ``path`` as ``open`` would, a new file readable by its owner only (0600): the
    lines hold the URLs as given, a password or a token in them too."""
    return os.open(path, flags, 0o600)


def failed(summary: CrawlSummary) -> bool:
    """Whether the run failed: some URL got no answer, or none was fetched while
    some could not be (robots.txt unreachable, or answered 400 or above).  URLs
    refused by robots.txt's rules are an answer, not a failure."""
    return bool(summary.errors or (
        not summary.pages and (summary.unreachable or summary.failed)))


def named_crawl_text(name: str, summary: CrawlSummary) -> str:
    """How far the named crawl has come: done before this run, fetched now, pending."""
    pending = summary.queued + summary.interrupted  # those cut short are queued again
    return (f"crawl {name!r}: {summary.done_before} done before, {summary.done} done now "
            f"({summary.pages} fetched), {pending} still pending")


def make_store(spec: str | None) -> Store:
    """The store ``--store`` names (not opened yet; see
    :func:`robotgate.store.from_text.store_from_text`): the per-user SQLite file by default."""
    try:
        return store_from_text(spec or "sqlite", default_path=default_store_path())
    except BadStoreText as exc:
        raise UsageError(f"{exc} (pick another with --store)") from None


@contextlib.contextmanager
def stop_signals(on_signal: Callable[[int], None]) -> Iterator[None]:
    """Route SIGINT and SIGTERM to ``on_signal`` while the loop runs (main thread only).

    The first signal is handled; the handler is then removed, so a second
    Ctrl-C raises KeyboardInterrupt at once if cleaning up hangs.
    """
    loop = asyncio.get_running_loop()
    handled: list[int] = []

    def once(signum: int) -> None:
        with contextlib.suppress(ValueError, RuntimeError):
            loop.remove_signal_handler(signum)
        on_signal(signum)

    for signum in (int(signal.SIGINT), int(signal.SIGTERM)):
        # Only possible in the main thread (and not on Windows); Ctrl-C then
        # raises KeyboardInterrupt, which main() turns into exit status 130.
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
            loop.add_signal_handler(signum, once, signum)
            handled.append(signum)
    try:
        yield
    finally:
        for signum in handled:
            with contextlib.suppress(ValueError, RuntimeError):
                loop.remove_signal_handler(signum)


class _FetchRun:
    """One ``robotgate fetch`` run inside its event loop."""

    def __init__(
        self,
        args: argparse.Namespace,
        sources: list[Source],
        store: Store,
        stream: IO[str],
        save_dir: Path | None,
    ) -> None:
        self.args = args
        self.sources = sources
        self.store = store
        self.stream = stream
        self.save_dir = save_dir
        self.stopped_by: int | None = None
        self.stop = asyncio.Event()
        self.phase = "opening"  # then "crawling", then "closing"
        self.task: asyncio.Task[int] | None = None
        self.summary = CrawlSummary()
        self.output = Output(stream)
        self.robots_log: RobotsLog | None = None

    def on_signal(self, signum: int) -> None:
        if self.stopped_by is not None:
            return
        self.stopped_by = signum
        if self.phase == "crawling":
            self.stop.set()  # the crawl cancels what is in flight and returns
        elif self.phase == "opening" and self.task is not None:
            self.task.cancel()  # still opening the store: stop at once
        # "closing": the store is being saved; let it finish.

    async def main(self) -> int:
        self.task = asyncio.get_running_loop().create_task(self._run())
        with stop_signals(self.on_signal):
            try:
                code = await self.task
            except asyncio.CancelledError:
                if self.stopped_by is None:
                    raise
                code = EXIT_OK
        if self.stopped_by is not None:
            if not self.args.quiet:
                say_block(summary_text(self.summary, interrupted=True))
                if getattr(self.args, "crawl", None):
                    say(named_crawl_text(self.args.crawl, self.summary))
            say("interrupted: every line written so far is complete")
            return EXIT_TERMINATED if self.stopped_by == signal.SIGTERM else EXIT_INTERRUPTED
        return code

    def _gate(self) -> Any:
        from ..gate import RobotGate

        args = self.args
        policy = FetchPolicy(
            timeout=args.timeout, forbidden_disallows_all=args.dialect == "classic"
        )
        gate = RobotGate(
            args.agent,
            robots_agent=getattr(args, "robots_agent", None),
            from_=args.from_,
            delay=args.delay,
            max_per_host=args.max_per_host,
            max_concurrency=args.concurrency,
            store=self.store,
            policy=policy,
            dialect=args.dialect,
            tdmrep=getattr(args, "tdmrep", False),
            hosts={host: HostSettings(delay=delay)
                   for host, delay in getattr(args, "host_delay", None) or ()},
        )
        # Each robots.txt request is told on its server's next line, as a page's is.
        self.robots_log = RobotsLog(gate.pace_key)
        gate.set_robots_transport(self.robots_log.wrap(gate.robots_transport))
        return gate

    async def _run(self) -> int:
        gate = self._gate()
        try:
            try:
                await gate.open()
            except StoreError as exc:
                error(f"{exc} (or pick another store with --store)")
                return EXIT_USAGE
            if self.stopped_by is not None:
                return EXIT_INTERRUPTED
            code = await self._crawl(gate)
        finally:
            self.phase = "closing"
            await gate.close()
        if gate.close_error is not None:
            # Every line written stands; what the store lost is the next run's to fetch again.
            error(f"{gate.close_error}; every line written is complete")
            return code if code != EXIT_OK else EXIT_FAILED
        return code

    async def _crawl(self, gate: Any) -> int:
        args = self.args
        summary = self.summary
        reader = UrlReader(self.sources)
        progress: Progress | LogLines | None = None
        if not args.quiet and isatty(sys.stderr):
            progress = self.output.progress = Progress(sys.stderr, summary)
        elif not args.quiet:
            progress = LogLines(sys.stderr, summary, getattr(args, "log_every", 60.0))
        if progress is not None:
            progress.start()
        self.phase = "crawling"
        urls: Any = reader.urls()
        if getattr(args, "sitemaps", None):
            urls = with_sitemaps(urls, [gate.sitemaps(origin) for origin in args.sitemaps])
        named = {"name": args.crawl} if getattr(args, "crawl", None) else {}
        try:
            await gate.crawl(
                urls,
                PageHandler(args.max_bytes, self.save_dir),
                fetch=functools.partial(gate.fetch, stream=True),
                concurrency=args.concurrency,
                per_host=args.max_per_host,
                timeout=args.timeout,
                retries=args.retries,
                record_directives=True,  # each line says what the page's directives are
                on_result=self._write,
                stop=self.stop,
                summary=summary,
                **named,
            )
        except (NamedCrawlsUnsupported, CrawlInUse) as exc:
            error(str(exc))
            return EXIT_USAGE
        except OutputBroken as broken:
            return self._broken(broken.cause)
        finally:
            self.phase = "closing"
            reader.stop()
            if progress is not None:
                await progress.stop()
        if self.stopped_by is not None:
            return EXIT_INTERRUPTED
        if not args.quiet:
            say_block(summary_text(summary, interrupted=False))
            if named:
                say(named_crawl_text(args.crawl, summary))
        if summary.invalid or reader.input_error:
            return EXIT_USAGE
        return EXIT_FAILED if failed(summary) else EXIT_OK

    def _write(self, result: CrawlResult) -> None:
        if result.kind == "invalid":
            error(scrub(str(result.error), result.url))
        record = record_json(result)
        if result.attempts > 1 or result.retried:
            record["attempt"] = result.attempts
        if result.retried:
            record["retried"] = True  # asked again: the URL's outcome is a later line
        if self.robots_log is not None and result.key is not None:
            robots = self.robots_log.take(result.key)
            if robots:
                record["robots_txt"] = robots
        self.output.write(record)

    def _broken(self, failure: OSError) -> int:
        if isinstance(failure, BrokenPipeError):
            silence_stdout(self.stream)
            return EXIT_BROKEN_PIPE
        error(f"cannot write the output: {failure.strerror or failure}")
        return EXIT_FAILED


def silence_stdout(stream: IO[str]) -> None:
    """The reader went away (``| head``): point stdout at /dev/null so that the
    interpreter's final flush does not complain about the broken pipe."""
    if stream is not sys.stdout:
        return
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
