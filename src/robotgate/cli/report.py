"""What ``robotgate fetch`` (and ``demo``) write: JSON lines, a progress bar, a summary."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import time
from collections import deque
from typing import IO, Any

from ..crawl import CrawlResult, CrawlSummary
from ..redaction import redact_text
from ..urls import scrub
from .args import PROG
from .check import rule_text

_PROGRESS_INTERVAL = 0.2
_RATE_WINDOW = 30.0  # seconds the live rate looks back
_RATE_LEAST = 1.0  # no rate said over less
_SUMMARY_ROWS = 20
_REASON_ORIGINS = 3
_DIGITS_RE = re.compile(r"(\d+)")

#: What each URL done came to (its last attempt), as the summary of ``robotgate fetch``
#: and ``robotgate report`` both count and name it: the field of
#: :class:`~robotgate.crawl.CrawlSummary` (and of a report's host), and its label.
URL_OUTCOMES = (
    ("pages", "fetched"),  # answered below 400
    ("failed", "failed"),  # answered 400 or above, a 429/503 after its retries too
    ("skipped", "refused by robots.txt"),  # a rule, or its fetch outcome
    ("unreachable", "robots.txt unreachable"),  # not asked: disallowed (RFC 9309)
    ("errors", "errors"),  # no answer
)


class OutputBroken(Exception):
    """The JSON lines could not be written (the reader left, the disk is full)."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(str(cause))
        self.cause = cause


def record_json(result: CrawlResult) -> dict[str, Any]:
    """The JSON line of one URL: what ``robotgate fetch`` returns, so ``url`` is the URL
    as given and ``final_url`` as the server redirected, whole (the line can be matched
    to its input and fetched again); what robotgate says in it (``reason``, ``error``)
    holds no secret (docs/secrets.md)."""
    url = result.url
    record: dict[str, Any] = {"url": url}
    kind = result.kind
    if kind == "invalid":
        record["error"] = scrub(str(result.error), url)
        return record
    record["key"] = result.key
    decision = result.decision
    if decision is not None:
        record["skipped"] = "disallowed"
        record["reason"] = decision.reason
        record["rule"] = rule_text(decision)
        record["line"] = decision.line
        if decision.outcome is not None:
            record["outcome"] = decision.outcome
        if result.final_url is not None and result.final_url != url:
            record["final_url"] = result.final_url  # a redirect led there
    else:
        if result.status is not None:
            record["status"] = result.status
            record["final_url"] = result.final_url or url
            if result.bytes is not None:
                record["bytes"] = result.bytes
            record.update(result.info)
            if result.usage is not None:
                record["usage"] = result.usage
            if result.directives is not None:
                record["directives"] = result.directives.as_json()
            if result.not_followed:
                record["not_followed"] = result.not_followed
            if result.tdm is not None:
                record["tdm"] = result.tdm.as_json()
        if result.error is not None:
            record["error"] = scrub(result.error, url)
    record["elapsed"] = round(result.elapsed, 3)
    record.update(story_json(result))
    return record


def story_json(result: CrawlResult) -> dict[str, Any]:
    """When the URL's request went and came back, what it waited for and why,
    and the interval its server was owed: the fields a report rebuilds a crawl from."""
    story: dict[str, Any] = {}
    if result.started is not None:
        story["started"] = round(result.started, 3)
    if result.answered is not None:
        story["answered"] = round(result.answered, 3)
    waited = round(result.waited, 3)
    story["waited"] = waited
    if waited > 0 and result.wait_reason:
        story["wait_reason"] = result.wait_reason
    if result.interval is not None:
        story["interval"] = round(result.interval, 3)
    return story


class Output:
    """JSON lines, each written whole and flushed, so an interrupted run keeps them all."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.progress: Progress | None = None
        # The bar is on the same terminal: clear it before a line, redraw after.
        self.shares_terminal = stream is sys.stdout and isatty(stream)

    def write(self, record: dict[str, Any]) -> None:
        """Write one line; raises :class:`OutputBroken` when the stream fails.  Its URLs
        are the user's, written whole; its texts were redacted as they were made."""
        line = json.dumps(record) + "\n"
        progress = self.progress if self.shares_terminal else None
        if progress is not None:
            progress.clear()
        try:
            self.stream.write(line)
            self.stream.flush()
        except OSError as exc:
            raise OutputBroken(exc) from exc
        if progress is not None:
            progress.draw()


def isatty(stream: IO[str] | None) -> bool:
    """Whether ``stream`` is a terminal (False for a closed or odd stream)."""
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):
        return False


class Rate:
    """URLs done per second over about the last ``window`` seconds."""

    def __init__(self, window: float = _RATE_WINDOW) -> None:
        self.window = window
        self._samples: deque[tuple[float, int]] = deque()

    def update(self, now: float, done: int) -> float | None:
        """Note ``done`` at monotonic time ``now``; the rate (None until it can tell)."""
        samples = self._samples
        samples.append((now, done))
        while len(samples) > 2 and now - samples[1][0] >= self.window:
            samples.popleft()
        then, done_then = samples[0]
        if now - then < _RATE_LEAST:
            return None
        return (done - done_then) / (now - then)


def live_parts(summary: CrawlSummary, rate: float | None) -> list[str]:
    """What the live view says, most telling first: done, rate, ETA (once the input's
    length is known), URLs fetched, failed (when some), refused, robots.txt unreachable
    (when some), errors, and the hosts active, waiting, backing off."""
    s = summary
    total = s.read + s.discovered
    more = "" if s.input_done else "+"
    parts = [f"{s.done}/{total}{more} done"]
    if rate is not None:
        parts.append(f"{rate:.1f}/s")
        left = total - s.done
        if s.input_done and left > 0 and rate > 0:
            parts.append(f"ETA {clock(left / rate)}")
    parts += [f"{s.pages} fetched"]
    if s.failed:
        parts.append(f"{s.failed} failed")
    parts.append(f"{s.skipped} refused")
    if s.unreachable:
        parts.append(f"{s.unreachable} robots.txt unreachable")
    parts += [f"{s.errors} errors",
              f"hosts: {s.hosts_active} active, {s.hosts_waiting} waiting, "
              f"{s.hosts_backing_off} backing off"]
    return parts


class Progress:
    """A one-line progress bar on a terminal's stderr, drawn from the live summary."""

    def __init__(self, stream: IO[str], summary: CrawlSummary) -> None:
        self.stream = stream
        self.summary = summary
        self.rate = Rate()
        self._task: asyncio.Task[None] | None = None
        self._shown = False

    def start(self) -> None:
        """Redraw every 0.2 s until :meth:`stop`."""
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            self.draw()
            await asyncio.sleep(_PROGRESS_INTERVAL)

    async def stop(self) -> None:
        """Stop redrawing and clear the bar."""
        task, self._task = self._task, None
        await _cancelled(task)
        self.clear()

    def render(self, width: int) -> str:
        """The bar and counters, cut to ``width``."""
        s = self.summary
        now = time.monotonic()
        rate = self.rate.update(now, s.done)
        total = s.read + s.discovered
        tail = " " + ", ".join([*live_parts(s, rate), clock(now - s.started)])
        cells = max(10, min(30, width - len(tail) - 3))
        filled = cells * min(s.done, total) // total if total else 0
        bar = f"[{'#' * filled}{'-' * (cells - filled)}]"
        return (bar + tail)[: max(1, width - 1)]

    def draw(self) -> None:
        """Draw the bar in place (``\\r``, then clear to the end of the line)."""
        try:
            width = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError):
            width = 80
        try:
            self.stream.write("\r" + self.render(width) + "\x1b[K")
            self.stream.flush()
            self._shown = True
        except (OSError, ValueError):
            pass

    def clear(self) -> None:
        """Erase the bar, if drawn."""
        if self._shown:
            with contextlib.suppress(OSError, ValueError):
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            self._shown = False


class LogLines:
    """Off a terminal (a log file, a service's journal): one line every ``every``
    seconds with what the bar would show."""

    def __init__(self, stream: IO[str], summary: CrawlSummary, every: float) -> None:
        self.stream = stream
        self.summary = summary
        self.every = every
        self.rate = Rate(window=max(every, _RATE_WINDOW))
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        self.rate.update(time.monotonic(), self.summary.done)
        while True:
            await asyncio.sleep(self.every)
            self.write()

    async def stop(self) -> None:
        task, self._task = self._task, None
        await _cancelled(task)

    def line(self) -> str:
        s = self.summary
        now = time.monotonic()
        rate = self.rate.update(now, s.done)
        return f"{PROG}: {clock(now - s.started)}: " + ", ".join(live_parts(s, rate))

    def write(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.stream.write(self.line() + "\n")
            self.stream.flush()


def clock(seconds: float) -> str:
    """``4.2s``, ``3:05`` or ``1:02:03``."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


#: The host table's columns: the tally's field, its heading.
_COLUMNS = (("pages", "fetched"), ("failed", "failed"), ("skipped", "refused"),
            ("unreachable", "unreachable"), ("errors", "errors"))


def host_table(summary: CrawlSummary, rows: int = _SUMMARY_ROWS) -> list[str]:
    """Per host, its URLs as the totals count them (fetched, failed, refused by
    robots.txt, robots.txt unreachable, errors) and the mean interval between requests."""
    tallies = sorted(
        summary.hosts.items(),
        key=lambda kv: (-(kv[1].pages + kv[1].failed + kv[1].skipped + kv[1].unreachable),
                        natural(kv[0])))
    if not tallies:
        return []
    shown = tallies[:rows]
    width = max([len("host"), *(len(host) for host, _ in shown)])
    lines = [f"{'host':<{width}}" + "".join(f"  {name:>7}" for _, name in _COLUMNS)
             + f"  {'mean interval':>13}"]
    for host, t in shown:
        mean = t.mean_interval()
        interval = f"{mean:.2f}s" if mean is not None else "-"
        lines.append(f"{host:<{width}}" + "".join(f"  {getattr(t, field):>{max(7, len(name))}}"
                                                  for field, name in _COLUMNS)
                     + f"  {interval:>13}")
    if len(tallies) > len(shown):
        lines.append(f"... and {len(tallies) - len(shown)} more hosts")
    if summary.hosts_folded:  # the summary keeps the max_hosts most recently busy
        others = summary.other_hosts
        lines.append(f"... and {summary.hosts_folded:,} tallies of less recently busy hosts, "
                     f"summed: {others.pages:,} fetched, {others.failed:,} failed, "
                     f"{others.skipped:,} refused, {others.unreachable:,} unreachable, "
                     f"{others.errors:,} errors")
    return lines


def natural(text: str) -> tuple[tuple[int, str], ...]:
    """A sort key putting "host:127.0.0.9" before "host:127.0.0.10"."""
    return tuple((int(p), "") if p.isdigit() else (-1, p) for p in _DIGITS_RE.split(text))


def skipped_origins(summary: CrawlSummary) -> list[str]:
    """Sites robots.txt ruled out as a whole (not by a rule), grouped by reason."""
    groups = summary.skipped_by_reason()
    if not groups:
        return []
    count = len(summary.skipped_origins)
    lines = [f"skipped origins ({count}): the whole site, because of its robots.txt"]
    if summary.skipped_origins_more:  # past max_hosts origins only their URLs are counted
        lines[0] += f" (and {summary.skipped_origins_more:,} URLs of origins not listed)"
    for reason, origins in groups.items():
        names = ", ".join(origins[:_REASON_ORIGINS])
        if len(origins) > _REASON_ORIGINS:
            names += f" and {len(origins) - _REASON_ORIGINS} more"
        lines.append(f"  {len(origins)} x {reason}")
        lines.append(f"      {names}")
    return lines


def url_totals(counts: dict[str, int]) -> str:
    """``4 fetched, 1 failed, ...``: the URLs done by outcome, as :data:`URL_OUTCOMES`
    names them (``counts``: field to number)."""
    return ", ".join(f"{counts[field]:,} {label}" for field, label in URL_OUTCOMES)


def summary_text(summary: CrawlSummary, interrupted: bool) -> str:
    """The table printed at the end of a crawl, then skipped origins, then the totals."""
    lines = host_table(summary)
    lines += skipped_origins(summary)
    status = "interrupted" if interrupted else "done"
    done = summary.done - summary.invalid
    total = (f"{status} in {clock(summary.elapsed)}: {done:,} URL{'' if done == 1 else 's'}: "
             + url_totals({field: getattr(summary, field) for field, _ in URL_OUTCOMES}))
    if summary.invalid:
        total += f", {summary.invalid:,} invalid URLs"
    if summary.retried:
        total += f"; {summary.retried:,} attempt{'' if summary.retried == 1 else 's'} retried"
    hosts = len(summary.hosts)
    said = f"; {hosts:,} host{'' if hosts == 1 else 's'}"
    if summary.hosts_folded:
        said += " listed, the most recently busy (others summed above)"
    lines.append(total + said)
    return redact_text("\n".join(lines))  # the reasons it groups by may quote an error


async def _cancelled(task: asyncio.Task[None] | None) -> None:
    """Cancel ``task`` (if any) and wait until it has ended."""
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
