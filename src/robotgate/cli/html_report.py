"""``robotgate report``: one self-contained HTML page about a crawl, from its JSON lines.

:func:`read_story` reads the lines ``robotgate fetch`` wrote one at a time and
keeps, per politeness key, exact tallies of URLs by their last attempt (fetched,
failed, refused by robots.txt, robots.txt unreachable, errors: what ``robotgate
fetch``'s summary counts, :data:`~robotgate.cli.report.URL_OUTCOMES`), of attempts
retried, robots.txt requests and waits, the start of every request,
the interval it was owed and what it came to (17 bytes a request: what an exact
gap check needs, whatever order the lines come in), and a bounded sample of the
requests in full for the timeline.  Refusals are grouped by the rule and line that
refused them, unreachable robots.txt by what went wrong, failed answers by status,
errors by kind, each with a few example URLs.
:func:`check_gaps` finds every two requests to one server closer than the
interval owed; :func:`render_parts` writes the page piece by piece: a summary,
the refusals, unreachable sites, failed answers and errors, a table of the busiest
hosts and of every host that slowed the crawl, then
their timelines as inline SVG, sortable with a few lines of inline JavaScript.
No network: no font, script or style comes from anywhere but the page itself.

Bounds: a line longer than :data:`MAX_LINE` is counted as unreadable; a line
nested too deep to read, or with a time no date can be told for (past the year
9999, infinite) or a wait longer than :data:`LONGEST`, ends the reading with
:class:`BadLine`, naming its line; a host
keeps at most :data:`MAX_MARKS` requests in full, fewer when there are many
hosts (:data:`SAMPLE_BUDGET` across all); :data:`MAX_GROUPS` reasons, statuses
or kinds are told apart (the rest counted together); the table lists the
:data:`MAX_TABLE` busiest hosts and, whatever their size, up to :data:`MAX_SLOWED`
more that slowed the crawl (429/503 answers, back-off, an interval owed longer than
the crawl's shortest: a long Crawl-delay); :data:`MAX_TIMELINES` get a timeline,
hosts with a gap too short first.  The totals count every line.
"""

from __future__ import annotations

import functools
import heapq
import html
import http
import json
import math
import random
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import IO, Any

from ..politeness.waits import BACKING_OFF
from ..urls import redact, scrub
from .report import URL_OUTCOMES, natural, url_totals

__all__ = [
    "BadLine",
    "CrawlStory",
    "Groups",
    "HostStory",
    "Request",
    "check_gaps",
    "read_lines",
    "read_story",
    "render",
    "render_parts",
]

MAX_LINE = 1 << 20  # bytes of one JSON line
MAX_MARKS = 300  # requests kept in full, and drawn, per host
SAMPLE_BUDGET = 60_000  # requests kept in full across all hosts (at most twice this)
MAX_SHORT_MARKS = 200  # short gaps drawn per host (all are counted)
MAX_TIMELINES = 100  # hosts drawn
MAX_TABLE = 1000  # hosts in the table, the busiest
MAX_SLOWED = 1000  # more in the table: hosts that slowed the crawl, whatever their size
MAX_GROUPS = 10_000  # refusal reasons, statuses, error kinds told apart
SHOWN_GROUPS = 50  # of those, on the page
EXAMPLES = 3  # example URLs of each
MAX_INTERVALS = 8  # distinct intervals owed said per host
#: The lines give times to the millisecond: two starts that far apart may be one
#: millisecond closer than they were.
TOLERANCE = 0.0015
THROTTLED = frozenset({429, 503})
#: The last Unix time a date can be told for (9999-12-31 23:59:59 UTC).
LAST_TIME = 253_402_300_799.0
#: Seconds a wait or an interval owed may say (about 30 years): no crawl's.
LONGEST = 1e9
_NONE = math.nan  # "no interval" in a host's array of intervals owed
#: What a request came to, as a host's ``kinds`` holds it; a pixel column of the
#: timeline shows the last of these among its requests.
_KINDS = ("page", "robots", "answer", "failed", "throttled")
_PAGE, _ROBOTS, _ANSWER, _FAILED, _THROTTLED = range(len(_KINDS))

_WIDTH = 960  # the timeline's drawing width, in pixels
_LEFT = 8
_HEIGHT = 62


@dataclass(slots=True)
class Request:
    """One request to a server: a page's, or a robots.txt one (``robots``)."""

    url: str
    started: float
    answered: float | None = None
    status: int | None = None
    error: str | None = None
    robots: bool = False
    waited: float = 0.0
    wait_reason: str = ""
    interval: float | None = None
    #: Set by :func:`check_gaps`: seconds since the server's previous request, the
    #: interval it was owed, and whether the gap was shorter.
    gap: float | None = None
    owed: float | None = None
    short: bool = False
    index: int = 0  # its place among the host's requests, in the order read


@dataclass(slots=True)
class HostStory:
    """One politeness key: its tallies, every request's start, a sample in full."""

    key: str
    #: A uniform sample of the host's requests (all of them while few), sorted by
    #: start once :func:`check_gaps` ran.
    requests: list[Request] = field(default_factory=list)
    seen: int = 0  # requests noted (pages' and robots.txt ones)
    lines: int = 0
    # URLs by their last attempt (URL_OUTCOMES); an attempt retried is no URL's outcome.
    pages: int = 0  # answered below 400
    skipped: int = 0  # refused by robots.txt
    unreachable: int = 0  # not asked: robots.txt could not be fetched
    failed: int = 0  # answered 400 or above
    errors: int = 0  # no answer (or the page's handling failed)
    retried: int = 0  # attempts asked again (a 429/503, a connection error, a timeout)
    throttled: int = 0  # 429 and 503 answers (attempts), robots.txt's too
    robots: int = 0  # robots.txt requests
    #: The shortest and the longest interval owed its requests said (None: none said).
    owed_least: float | None = None
    owed_most: float | None = None
    waited: float = 0.0
    backed_off: float = 0.0  # of waited, for back-off or Retry-After
    short_gaps: int = 0
    starts: array[float] = field(default_factory=lambda: array("d"))
    #: The interval each request was owed (NaN: a robots.txt request, or none said).
    intervals_owed: array[float] = field(default_factory=lambda: array("d"))
    #: What each request came to (one of _KINDS), for the timeline's thin marks.
    kinds: bytearray = field(default_factory=bytearray)
    # Tuples, empty ones shared: a crawl may have a million hosts of one page.
    intervals: tuple[float, ...] = ()  # distinct, a few
    #: Short gaps to draw: (start, gap, owed), at most MAX_SHORT_MARKS.
    shorts: tuple[tuple[float, float, float], ...] = ()

    @property
    def complete(self) -> bool:
        """Whether the sample holds every request."""
        return len(self.requests) == self.seen


@dataclass(slots=True)
class Group:
    """URLs that share a reason: how many, a description, a few examples."""

    label: str
    count: int = 0
    detail: str = ""
    examples: list[str] = field(default_factory=list)


class Groups:
    """Groups by key, at most :data:`MAX_GROUPS` told apart; the rest counted as
    ``others``, so that the counts still add up to every URL."""

    def __init__(self) -> None:
        self.by_key: dict[object, Group] = {}
        self.others = 0
        self.total = 0

    def add(self, key: object, label: str, url: str, detail: str = "") -> None:
        self.total += 1
        group = self.by_key.get(key)
        if group is None:
            if len(self.by_key) >= MAX_GROUPS:
                self.others += 1
                return
            group = self.by_key[key] = Group(label, detail=detail)
        group.count += 1
        if len(group.examples) < EXAMPLES:
            group.examples.append(redact(url))

    def largest(self) -> list[Group]:
        return sorted(self.by_key.values(), key=lambda g: (-g.count, g.label))


@dataclass(slots=True)
class CrawlStory:
    """What the JSON lines of one crawl tell."""

    hosts: dict[str, HostStory] = field(default_factory=dict)
    lines: int = 0
    unreadable: int = 0  # not JSON, or not a crawl line
    invalid: int = 0  # lines of invalid URLs (no server)
    interrupted: int = 0  # URLs in flight when the crawl was stopped
    kept: int = 0  # requests kept in full, across hosts
    #: Requests a host keeps in full, now (fewer as hosts come).
    sample_size: int = field(default_factory=lambda: MAX_MARKS)
    waits: dict[str, float] = field(default_factory=dict)  # seconds by reason
    waiting: int = 0  # requests that waited for their turn
    refusals: Groups = field(default_factory=Groups)  # by rule and line
    unreachable: Groups = field(default_factory=Groups)  # by what went wrong
    failures: Groups = field(default_factory=Groups)  # answers 400 and above, by status
    errors: Groups = field(default_factory=Groups)  # no answer, by kind
    invalid_urls: Groups = field(default_factory=Groups)
    began: float | None = None  # the first request's start
    ended: float | None = None  # the last answer (or start)
    rng: random.Random = field(default_factory=lambda: random.Random(0))

    @property
    def short_gaps(self) -> int:
        return sum(host.short_gaps for host in self.hosts.values())

    def least_owed(self) -> float | None:
        """The shortest interval any host was owed: the crawl's own delay, as a rule."""
        return min((host.owed_least for host in self.hosts.values()
                    if host.owed_least is not None), default=None)

    def slowed(self, host: HostStory, least: float | None) -> bool:
        """Whether ``host`` slowed the crawl: 429/503 answers, time backing off, or an
        interval owed longer than ``least`` (the crawl's shortest: a long Crawl-delay)."""
        return bool(host.throttled or host.backed_off > 0 or (
            least is not None and host.owed_most is not None
            and host.owed_most > least + TOLERANCE))

    def span(self) -> tuple[float, float] | None:
        """The first request's start and the last answer (or start)."""
        if self.began is None or self.ended is None:
            return None
        return self.began, self.ended

    def total(self, name: str) -> int:
        """A host tally summed over every host (``pages``, ``skipped``, ...)."""
        return sum(getattr(host, name) for host in self.hosts.values())


def read_lines(stream: IO[bytes]) -> Iterator[bytes | None]:
    """The lines of ``stream``, each read no further than :data:`MAX_LINE` bytes;
    ``None`` for a line too long (the rest of it is skipped)."""
    while True:
        chunk = stream.readline(MAX_LINE + 1)
        if not chunk:
            return
        if len(chunk) > MAX_LINE and not chunk.endswith(b"\n"):
            while chunk and not chunk.endswith(b"\n"):
                chunk = stream.readline(MAX_LINE)
            yield None
            continue
        yield chunk


class BadLine(ValueError):
    """A line the report cannot tell: ``number`` (1-based, blank lines counted) and why."""

    def __init__(self, number: int, why: str) -> None:
        super().__init__(f"line {number}: {why}")
        self.number = number


class _OutOfRange(ValueError):
    """A field's number that no crawl could have written (its line is told by the reader)."""


def _number(value: Any) -> float | None:
    """A JSON number as a float (inf for one too large), None for anything else."""
    kind = type(value)  # exact types: a bool is no number here
    if kind is float:
        return value  # type: ignore[no-any-return]
    if kind is int:
        return float(value) if abs(value) < 1e300 else math.inf
    return None


def _time(record: dict[str, Any], name: str) -> float | None:
    """The Unix time ``record[name]`` (None when absent or no number)."""
    value = _number(record.get(name))
    if value is not None and not 0.0 <= value <= LAST_TIME:
        raise _OutOfRange(f"{name!r} is {_said(record[name])}, no Unix time a date can be "
                          "told for (0 to the year 9999)")
    return value


def _duration(record: dict[str, Any], name: str) -> float | None:
    """The seconds ``record[name]`` (None when absent or no number)."""
    value = _number(record.get(name))
    if value is not None and not 0.0 <= value <= LONGEST:
        raise _OutOfRange(f"{name!r} is {_said(record[name])}, no seconds a crawl waits "
                          f"(0 to {LONGEST:g})")
    return value


def _said(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _status(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_story(lines: Iterable[bytes | str | None]) -> CrawlStory:
    """The crawl the JSON lines tell, read one line at a time; lines that are no
    crawl line are counted."""
    story = CrawlStory()
    decode = json.JSONDecoder().decode
    for number, line in enumerate(lines, 1):
        record = None
        if line is not None:  # None: a line too long to read
            text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
            try:
                record = decode(text)
            except ValueError:
                if not text.strip():
                    continue  # a blank line: no line at all
            except RecursionError:
                raise BadLine(number, "nested deeper than the lines of a crawl are "
                              "(no JSON line robotgate fetch writes)") from None
        story.lines += 1
        if type(record) is not dict or type(record.get("url")) is not str:
            story.unreadable += 1
            continue
        if "key" not in record:  # robotgate fetch writes no key for an invalid URL
            story.invalid += 1
            message = _text(record.get("error")) or "invalid URL"
            story.invalid_urls.add("invalid", "invalid URL", record["url"],
                                   scrub(message, record["url"]))
            continue
        key = _text(record.get("key"))
        if key is None:  # "key": null: in flight when the crawl was stopped
            story.interrupted += 1
            continue
        try:
            _add_line(story, key, record)
        except _OutOfRange as exc:
            raise BadLine(number, str(exc)) from None
    check_gaps(story)
    return story


def _add_line(story: CrawlStory, key: str, record: dict[str, Any]) -> None:
    host = story.hosts.get(key)
    if host is None:
        host = story.hosts[key] = HostStory(key)
        _fit_samples(story)
    host.lines += 1
    robots = record.get("robots_txt")
    if isinstance(robots, list):
        for item in robots:
            if isinstance(item, dict):
                _add_robots(story, host, item)
    url: str = record["url"]
    waited = _duration(record, "waited") or 0.0
    reason = _text(record.get("wait_reason")) or ""
    if waited > 0:
        story.waiting += 1
        host.waited += waited
        if reason in BACKING_OFF:
            host.backed_off += waited
        name = reason or "unsaid"
        story.waits[name] = story.waits.get(name, 0.0) + waited
    status = _status(record.get("status"))
    error = _text(record.get("error"))
    if record.get("retried") is True:
        host.retried += 1  # an attempt asked again: a request, no URL's outcome
    elif record.get("skipped") is not None:
        if record.get("outcome") == "unreachable":
            host.unreachable += 1
            why = _text(record.get("reason")) or "robots.txt unreachable"
            story.unreachable.add(why, why, url)
        else:
            host.skipped += 1
            _add_refusal(story, record)
    elif error is not None:
        host.errors += 1
        kind = error.split(": ", 1)[0][:80]
        story.errors.add(kind, kind, url, scrub(error, url)[:300])
    elif status is None:
        host.errors += 1
        story.errors.add("", "no answer said", url)
    elif status >= 400:
        host.failed += 1
        story.failures.add(status, _status_label(status), url)
    else:
        host.pages += 1
    if status in THROTTLED:
        host.throttled += 1
    started = _time(record, "started")
    if started is None:
        return  # no request went (refused, or failed before it left)
    answered = _time(record, "answered")
    interval = _duration(record, "interval")
    if interval is not None:
        if host.owed_least is None or interval < host.owed_least:
            host.owed_least = interval
        if host.owed_most is None or interval > host.owed_most:
            host.owed_most = interval
        if len(host.intervals) < MAX_INTERVALS and interval not in host.intervals:
            host.intervals = (*host.intervals, interval)
    index = _note(story, host, started, answered, interval, _kind_code(status, error))
    if index is not None:
        _sample(story, host, index, Request(
            url, started, answered, status, error, waited=waited, wait_reason=reason,
            interval=interval, index=host.seen - 1))


def _add_refusal(story: CrawlStory, record: dict[str, Any]) -> None:
    url: str = record["url"]
    rule = _text(record.get("rule"))
    line = _status(record.get("line"))
    reason = _text(record.get("reason")) or "disallowed"
    if rule is not None:
        label = f"{rule} (line {line})" if line is not None else rule
        story.refusals.add(("rule", rule, line), label, url, reason)
        return
    outcome = _text(record.get("outcome"))
    if outcome is not None:
        story.refusals.add(("outcome", outcome), outcome, url, reason)
    else:
        story.refusals.add(("reason", reason), reason, url)


@functools.lru_cache(maxsize=1024)
def _status_label(status: int) -> str:
    try:
        return f"{status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def _add_robots(story: CrawlStory, host: HostStory, item: dict[str, Any]) -> None:
    started = _time(item, "started")
    if started is None:
        return
    status = _status(item.get("status"))
    host.robots += 1
    if status in THROTTLED:
        host.throttled += 1
    answered = _time(item, "answered")
    index = _note(story, host, started, answered, None,
                  _THROTTLED if status in THROTTLED else _ROBOTS)
    if index is not None:
        _sample(story, host, index, Request(
            _text(item.get("url")) or "robots.txt", started, answered, status,
            _text(item.get("error")), robots=True, index=host.seen - 1))


def _kind_code(status: int | None, error: str | None) -> int:
    if status in THROTTLED:
        return _THROTTLED
    if error is not None or status is None:
        return _FAILED
    return _ANSWER if status >= 400 else _PAGE


def _note(story: CrawlStory, host: HostStory, started: float, answered: float | None,
          interval: float | None, kind: int) -> int | None:
    """Note one request's start (every one, for the gap check); the place in the
    host's sample it takes, or None when the sample leaves it out."""
    host.starts.append(started)
    host.kinds.append(kind)
    host.intervals_owed.append(_NONE if interval is None else interval)
    host.seen += 1
    end = started if answered is None else max(answered, started)
    if story.began is None or started < story.began:
        story.began = started
    if story.ended is None or end > story.ended:
        story.ended = end
    size = len(host.requests)
    if size < story.sample_size:
        return size
    place = story.rng.randrange(host.seen)  # reservoir sampling: uniform over all
    return place if place < size else None


def _sample(story: CrawlStory, host: HostStory, place: int, request: Request) -> None:
    if place == len(host.requests):
        host.requests.append(request)
        story.kept += 1
    else:
        host.requests[place] = request


def _fit_samples(story: CrawlStory) -> None:
    """Each host's sample shrinks as hosts come, so that all of them hold about
    SAMPLE_BUDGET requests (at most twice that; past SAMPLE_BUDGET hosts, none);
    a random subset of a uniform sample is a uniform sample."""
    fits = min(MAX_MARKS, SAMPLE_BUDGET // len(story.hosts))
    if fits * 2 > story.sample_size or fits == story.sample_size:
        return  # trimmed each time the size halves (and once to none)
    story.sample_size = fits
    for host in story.hosts.values():
        if len(host.requests) > fits:
            story.kept -= len(host.requests) - fits
            host.requests = story.rng.sample(host.requests, fits)


def check_gaps(story: CrawlStory) -> None:
    """Count each request that started closer to its server's previous one than the
    interval owed: a page's own ``interval``, or for a robots.txt request the
    interval of the server's page before it (the gate keeps that one for it).
    Every request is checked; the sampled ones learn their gap, and the first
    :data:`MAX_SHORT_MARKS` short gaps of a host are kept to draw."""
    for host in story.hosts.values():
        starts, owed_by = host.starts, host.intervals_owed
        count = len(starts)
        if all(starts[i] <= starts[i + 1] for i in range(count - 1)):
            order: Iterable[int] = range(count)
        else:  # a stable sort: a line's robots.txt requests stay before its page
            order = sorted(range(count), key=starts.__getitem__)
        sampled = {request.index: request for request in host.requests}
        host.short_gaps = 0
        shorts: list[tuple[float, float, float]] = []
        owed: float | None = None
        previous: float | None = None
        for index in order:
            started = starts[index]
            interval = owed_by[index]
            if interval == interval:  # not NaN: a page that said its interval
                owed = interval
            gap = None if previous is None else started - previous
            short = False
            if gap is not None and owed is not None and gap < owed - TOLERANCE:
                short = True
                host.short_gaps += 1
                if len(shorts) < MAX_SHORT_MARKS:
                    shorts.append((started, gap, owed))
            request = sampled.get(index)
            if request is not None:
                request.gap, request.owed, request.short = gap, owed, short
            previous = started
        host.shorts = tuple(shorts)
        host.requests.sort(key=lambda request: (request.started, request.index))


# -- the page ------------------------------------------------------------------------


def _escape(value: object) -> str:
    return html.escape(str(value), quote=True)


def _seconds(value: float) -> str:
    if value >= 3600:
        return f"{value / 3600:.1f} h"
    if value >= 60:
        return f"{value / 60:.1f} min"
    return f"{value:.3g} s" if value < 10 else f"{value:.1f} s"


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def _ranked(story: CrawlStory, most: int) -> list[HostStory]:
    """The first ``most`` hosts in the page's order: those with a gap too short
    first, then the busiest (most lines), then by name."""
    first = heapq.nsmallest(most, story.hosts.values(),
                            key=lambda h: (h.short_gaps == 0, -h.lines, h.key))
    return sorted(first, key=lambda h: (h.short_gaps == 0, -h.lines, natural(h.key)))


def _with_slowed(story: CrawlStory, busiest: list[HostStory]) -> list[HostStory]:
    """``busiest``, then the hosts that slowed the crawl left out of them, whatever
    their size (up to :data:`MAX_SLOWED`: those that slowed it most)."""
    least = story.least_owed()
    shown = {host.key for host in busiest}
    slowed = heapq.nsmallest(
        MAX_SLOWED,
        (host for host in story.hosts.values()
         if host.key not in shown and story.slowed(host, least)),
        key=lambda h: (-h.throttled, -h.backed_off, -(h.owed_most or 0.0), h.key))
    return busiest + sorted(slowed, key=lambda h: (-h.lines, natural(h.key)))


#: What the summary says of each count of URLs (URL_OUTCOMES labels them).
_URL_NOTES = {
    "pages": "answered below 400",
    "failed": "answered 400 or above, a 429/503 after its retries too",
    "skipped": "by a rule, or by robots.txt's answer",
    "unreachable": "not asked: the site's robots.txt could not be fetched, so it counts "
                   "as disallowed, RFC 9309",
    "errors": "no answer",
}


def render(story: CrawlStory, title: str = "robotgate crawl report") -> str:
    """The report as one HTML page (nothing loaded from elsewhere)."""
    return "".join(render_parts(story, title))


def render_parts(story: CrawlStory, title: str = "robotgate crawl report") -> Iterator[str]:
    """The page in pieces, to be written one after the other."""
    span = story.span()
    hosts = _ranked(story, max(MAX_TABLE, MAX_TIMELINES))
    yield _HEAD.replace("TITLE", _escape(title))
    yield f"<h1>{_escape(title)}</h1>\n"
    yield _summary(story, span)
    yield _groups_section("refusals", "Refused by robots.txt", "rule (line) or reason",
                          story.refusals)
    yield _groups_section("unreachable", "robots.txt unreachable (the site not asked: "
                          "disallowed, RFC 9309)", "what went wrong", story.unreachable)
    yield _groups_section("failures", "Failed (answered 400 or above, not fetched)",
                          "status", story.failures)
    yield _groups_section("errors", "Errors (no answer)", "kind", story.errors)
    yield _groups_section("invalid", "Invalid URLs", "", story.invalid_urls)
    yield _host_table(story, _with_slowed(story, hosts[:MAX_TABLE]))
    yield _LEGEND
    yield '<div id="timelines">\n'
    drawn = hosts[:MAX_TIMELINES]
    for order, host in enumerate(drawn):
        yield _host_section(host, span, order)
    if len(drawn) < len(story.hosts):
        yield (f'<p class="hint">The timelines of {len(story.hosts) - len(drawn):,} more hosts '
               "are left out: the totals above count them.</p>\n")
    yield "</div>\n"
    yield _SCRIPT
    yield "</body></html>\n"


def _summary(story: CrawlStory, span: tuple[float, float] | None) -> str:
    short = story.short_gaps
    rows = []
    if span is not None:
        rows.append(("crawl", f"{_when(span[0])} to {_when(span[1])} "
                              f"({_seconds(span[1] - span[0])})"))
    counts = {name: story.total(name) for name, _ in URL_OUTCOMES}
    rows += [
        ("hosts", f"{len(story.hosts):,}"),
        ("URLs", f"{sum(counts.values()):,} by their last attempt, as robotgate fetch's "
                 f"summary counts them: {url_totals(counts)}"),
    ]
    rows += [(label, f"{counts[name]:,} ({_URL_NOTES[name]})") for name, label in URL_OUTCOMES]
    rows += [
        ("attempts retried", f"{story.total('retried'):,} (a 429/503, a connection error "
                             "or a timeout, and the URL asked again)"),
        ("429/503 answers", f"{story.total('throttled'):,} (attempts, robots.txt's too)"),
        ("robots.txt requests", f"{story.total('robots'):,}"),
    ]
    if story.waits:
        waits = ", ".join(f"{_seconds(s)} {reason}" for reason, s in
                          sorted(story.waits.items(), key=lambda kv: -kv[1]))
        rows.append(("waited for turns, summed over requests",
                     f"{waits}: the waits of {_count(story.waiting, 'request')}, added up "
                     "(requests to different hosts wait at the same time, so the sum may be "
                     "longer than the crawl)"))
    notes = []
    if story.invalid:
        notes.append(_count(story.invalid, "invalid URL"))
    if story.interrupted:
        notes.append(f"{story.interrupted:,} in flight when the crawl was stopped")
    if story.unreadable:
        notes.append(_count(story.unreadable, "unreadable line"))
    rows.append(("lines", f"{story.lines:,}" + (": " + ", ".join(notes) if notes else "")))
    requests = sum(h.seen for h in story.hosts.values())
    rows.append(("requests", f"{requests:,}, every one checked for its gap; "
                             f"{story.kept:,} kept in full for the timelines"))
    body = "".join(f"<tr><th>{_escape(k)}</th><td>{_escape(v)}</td></tr>" for k, v in rows)
    if short:
        verdict = (f'<p id="verdict" class="bad">{_count(short, "gap")} '
                   "shorter than the interval owed: drawn in red below.</p>")
    else:
        verdict = ('<p id="verdict" class="good">No host was asked sooner than its interval '
                   "allowed.</p>")
    return (f'<section id="summary"><table class="facts">{body}</table>{verdict}'
            "</section>\n")


def _groups_section(anchor: str, title: str, what: str, groups: Groups) -> str:
    if not groups.total:
        return ""
    rows = []
    shown = groups.largest()[:SHOWN_GROUPS]
    for group in shown:
        detail = (f'<div class="detail">{_escape(group.detail)}</div>'
                  if group.detail and group.detail != group.label else "")
        examples = "".join(f"<li>{_escape(url)}</li>" for url in group.examples)
        rows.append(f"<tr><td>{_escape(group.label)}{detail}</td><td>{group.count:,}</td>"
                    f'<td><ul class="examples">{examples}</ul></td></tr>')
    rest = groups.total - sum(group.count for group in shown)
    more = ""
    if rest:
        kinds = len(groups.by_key) - len(shown) + (1 if groups.others else 0)
        more = (f'<p class="hint">{rest:,} more URLs in {kinds:,}'
                f"{'+' if groups.others else ''} more groups, not shown.</p>")
    head = f"<th>{_escape(what)}</th>" if what else "<th></th>"
    return (f'<section id="{anchor}"><h2>{_escape(title)}: {groups.total:,}</h2>'
            f'<table class="groups"><thead><tr>{head}<th>URLs</th><th>examples</th>'
            f"</tr></thead><tbody>{''.join(rows)}</tbody></table>{more}</section>\n")


_COLUMNS = (("host", "key"), ("fetched", "pages"), ("failed", "failed"),
            ("refused", "skipped"), ("unreachable", "unreachable"), ("errors", "errors"),
            ("retried", "retried"), ("429/503", "throttled"), ("robots.txt", "robots"),
            ("interval owed", "owed"), ("waited (sum)", "waited"),
            ("backing off (sum)", "backedoff"), ("short gaps", "short"))


def _host_table(story: CrawlStory, hosts: list[HostStory]) -> str:
    head = "".join(
        f'<th><button type="button" data-sort="{attr}">{_escape(name)}</button></th>'
        for name, attr in _COLUMNS)
    rows = []
    for order, h in enumerate(hosts):
        bad = ' class="bad"' if h.short_gaps else ""
        rows.append(
            f'<tr {_data(h, order)}{bad}><td><a href="#{_anchor(h.key)}">{_escape(h.key)}</a>'
            f"</td><td>{h.pages}</td><td>{h.failed}</td><td>{h.skipped}</td>"
            f"<td>{h.unreachable}</td><td>{h.errors}</td><td>{h.retried}</td>"
            f"<td>{h.throttled}</td><td>{h.robots}</td><td>{_owed(h)}</td>"
            f"<td>{h.waited:.2f}</td><td>{h.backed_off:.2f}</td><td>{h.short_gaps}</td></tr>")
    more = ""
    left_out = len(story.hosts) - len(hosts)
    if left_out:
        sums = ", ".join(
            f"{story.total(name) - sum(getattr(h, name) for h in hosts):,} {label}"
            for name, label in URL_OUTCOMES)
        more = (f'<p class="hint">{left_out:,} more hosts, with {sums}, are left out '
                f"of the table (the totals above count them); {_slowed_left_out(story, hosts)}"
                ".</p>")
    return (f'<h2>Hosts</h2><p class="hint">The busiest hosts, and every host that slowed '
            "the crawl (429/503 answers, back-off, a longer interval owed), whatever its "
            "size. URLs counted by their last attempt; waits are sums over the host's "
            "requests, in seconds. Sort the hosts (table and timelines) by a column: "
            f'click its name.</p><div id="hostbox"><table id="hosts"><thead><tr>{head}</tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table></div>{more}\n')


def _owed(host: HostStory) -> str:
    return f"{host.owed_most:g}" if host.owed_most is not None else "-"


def _slowed_left_out(story: CrawlStory, shown: list[HostStory]) -> str:
    """What the hint says of hosts that slowed the crawl and still found no room."""
    least = story.least_owed()
    keys = {host.key for host in shown}
    count = sum(1 for host in story.hosts.values()
                if host.key not in keys and story.slowed(host, least))
    if not count:
        return "none of them slowed the crawl"
    return (f"{count:,} of them slowed the crawl too, past the {MAX_SLOWED:,} that did "
            "shown")


def _anchor(key: str) -> str:
    return "host-" + "".join(c if c.isalnum() else "-" for c in key)


def _data(host: HostStory, order: int) -> str:
    """The attributes the page's script sorts by."""
    return (f'data-key="{_escape(host.key)}" data-order="{order}" data-pages="{host.pages}" '
            f'data-skipped="{host.skipped}" data-failed="{host.failed}" '
            f'data-unreachable="{host.unreachable}" data-errors="{host.errors}" '
            f'data-retried="{host.retried}" '
            f'data-throttled="{host.throttled}" data-robots="{host.robots}" '
            f'data-owed="{host.owed_most or 0.0:g}" '
            f'data-waited="{host.waited:.3f}" data-backedoff="{host.backed_off:.3f}" '
            f'data-short="{host.short_gaps}"')


def _host_section(host: HostStory, span: tuple[float, float] | None, order: int) -> str:
    data = _data(host, order)
    owed = ", ".join(_seconds(i) for i in sorted(host.intervals)) or "unknown"
    if len(host.intervals) >= MAX_INTERVALS:
        owed += ", …"
    heading = (f'<h3>{_escape(host.key)}</h3><p class="facts">URLs: '
               + url_totals({name: getattr(host, name) for name, _ in URL_OUTCOMES})
               + f"; {host.retried:,} attempts retried, {_count(host.throttled, 'answer')} "
               f"429/503, {_count(host.robots, 'robots.txt request')}, waited {host.waited:.2f}"
               f" s summed over requests ({host.backed_off:.2f} s backing off); interval "
               f"owed: {owed}")
    if host.short_gaps:
        heading += (f'; <strong class="bad">{_count(host.short_gaps, "gap")} shorter than '
                    "owed</strong>")
    heading += "</p>"
    svg = _timeline(host, span) if span is not None and host.seen else (
        '<p class="hint">No request went to this host.</p>')
    return (f'<section class="host" id="{_anchor(host.key)}" {data}>{heading}{svg}'
            "</section>\n")


def _timeline(host: HostStory, span: tuple[float, float]) -> str:
    t0, t1 = span
    scale = _WIDTH / max(t1 - t0, 1e-3)

    def x(t: float) -> float:
        return round(_LEFT + (t - t0) * scale, 2)

    marks: list[str] = []
    for tick in _ticks(t1 - t0):
        tx = x(t0 + tick)
        marks.append(f'<line class="grid" x1="{tx}" y1="0" x2="{tx}" y2="{_HEIGHT - 12}"/>'
                     f'<text class="tick" x="{tx}" y="{_HEIGHT - 2}">{_seconds(tick)}</text>')
    if not host.complete:
        marks += _every_request(host, t0, scale)
    for request in host.requests:
        start = x(request.started)
        if not request.robots and request.interval is not None and host.complete:
            # The interval the next request had to keep from this one.
            width = max(request.interval * scale, 0.5)
            marks.append(f'<rect class="owed" x="{start}" y="14" width="{width:.2f}" '
                         'height="6"/>')
        if request.waited > 0:
            left = x(request.started - request.waited)
            kind = "backoff" if request.wait_reason in BACKING_OFF else "wait"
            marks.append(
                f'<rect class="{kind}" x="{left}" y="36" width="{max(start - left, 0.5):.2f}" '
                f'height="8"><title>waited {request.waited:.3f} s: '
                f'{_escape(request.wait_reason or "unsaid")}</title></rect>')
        end = request.answered if request.answered is not None else request.started
        width = max((end - request.started) * scale, 3.0 if request.robots else 1.5)
        marks.append(
            f'<rect class="{_kind(request)}" x="{start}" y="22" width="{width:.2f}" '
            f'height="12"><title>{_escape(_describe(request, t0))}</title></rect>')
    for started, gap, owed in host.shorts:
        marks.append(
            f'<line class="short" x1="{x(started - gap)}" y1="8" x2="{x(started)}" y2="8">'
            f"<title>gap {gap:.3f} s at +{started - t0:.3f} s, interval owed {owed:g} s"
            "</title></line>")
    notes = []
    if not host.complete:
        notes.append(f"{len(host.requests):,} of {host.seen:,} requests are drawn in full "
                     "(a sample drawn at random); the thin marks show where every one went, "
                     "each in the colour of the most telling kind at that pixel")
    if host.short_gaps > len(host.shorts):
        notes.append(f"the first {len(host.shorts)} of {host.short_gaps:,} short gaps are "
                     "drawn")
    more = f'<p class="hint">{_escape("; ".join(notes))}.</p>' if notes else ""
    return (f'<svg class="timeline" viewBox="0 0 {_WIDTH + 2 * _LEFT} {_HEIGHT}" role="img" '
            f'aria-label="requests to {_escape(host.key)} over time">{"".join(marks)}</svg>'
            f"{more}")


def _every_request(host: HostStory, t0: float, scale: float) -> list[str]:
    """Where every request went, one pixel column each, in the colour of the most
    telling kind among the column's requests: thin marks the sample is drawn over."""
    columns: dict[int, int] = {}
    for started, kind in zip(host.starts, host.kinds, strict=True):
        column = int((started - t0) * scale)
        if kind > columns.get(column, -1):
            columns[column] = kind
    ordered = sorted(columns.items())
    paths = []
    for code, name in enumerate(_KINDS):
        d = "".join(f"M{_LEFT + c} 24v8" for c, k in ordered if k == code)
        if d:
            paths.append(f'<path class="every {name}" d="{d}"/>')
    return paths


def _kind(request: Request) -> str:
    if request.short:
        return "req short"
    if request.robots:
        return "req robots throttled" if request.status in THROTTLED else "req robots"
    if request.status in THROTTLED:
        return "req throttled"
    if request.error is not None or request.status is None:
        return "req failed"
    if request.status >= 400:
        return "req answer"
    return "req page"


def _describe(request: Request, t0: float) -> str:
    what = "robots.txt " if request.robots else ""
    text = f"{what}{redact(request.url)} at +{request.started - t0:.3f} s"
    if request.status is not None:
        text += f": {request.status}"
    if request.error:
        text += f": {scrub(request.error, request.url)}"
    if request.answered is not None:
        text += f" in {request.answered - request.started:.3f} s"
    if request.gap is not None:
        text += f"; {request.gap:.3f} s after the previous request"
    if request.owed is not None:
        text += f" (interval owed {request.owed:g} s)"
    return text


def _ticks(length: float) -> list[float]:
    """About six round times from 0 to ``length`` seconds."""
    if length <= 0:
        return [0.0]
    raw = length / 6
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    count = int(length / step) + 1
    return [i * step for i in range(count)]


_HEAD = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>TITLE</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; overflow-wrap: anywhere; } h2 { font-size: 1.15em; margin: 1em 0 0.3em; }
h3 { font-size: 1.05em; margin: 0.2em 0; font-family: monospace; overflow-wrap: anywhere; }
table { border-collapse: collapse; max-width: 100%; }
td, th { overflow-wrap: anywhere; }
table.facts th { text-align: left; padding-right: 1em; font-weight: 600; vertical-align: top; }
table.groups { width: 100%; table-layout: fixed; }
table.groups th, table.groups td { text-align: left; vertical-align: top; padding: 2px 8px;
  border-bottom: 1px solid #ddd; }
table.groups th:nth-child(2), table.groups td:nth-child(2) { width: 6em; text-align: right; }
table.groups th:nth-child(3) { width: 50%; }
table.groups td:first-child { font-family: monospace; }
.detail { font-family: system-ui, sans-serif; color: #666; font-size: 0.85em; }
ul.examples { margin: 0; padding: 0; list-style: none; font-family: monospace;
  font-size: 0.85em; }
#hosts td, #hosts th { padding: 2px 6px; text-align: right; border-bottom: 1px solid #ddd; }
#hosts td:first-child { text-align: left; font-family: monospace; }
#hosts th:first-child { text-align: left; }
#hosts button { font: inherit; font-weight: 600; border: 0; background: none;
  cursor: pointer; padding: 0; }
#hosts button.active { text-decoration: underline; }
.good { color: #18794e; font-weight: 600; } .bad { color: #c62828; font-weight: 600; }
tr.bad td { color: #c62828; }
.hint { color: #666; font-size: 0.9em; }
section.host { margin: 0.8em 0; padding-top: 0.4em; border-top: 1px solid #eee; }
section.host p.facts { margin: 0 0 0.2em; color: #444; font-size: 0.9em; }
svg.timeline { display: block; background: #fafafa; width: 100%; max-width: 976px;
  height: auto; }
.grid { stroke: #e2e2e2; } .tick { font-size: 9px; fill: #888; text-anchor: middle; }
.owed { fill: #b9d4f0; opacity: 0.7; }
.every { stroke-width: 1; } .every.page { stroke: #1f6fb2; }
.every.robots { stroke: #7b3fa0; } .every.answer { stroke: #8d5a2b; }
.every.failed { stroke: #444; } .every.throttled { stroke: #e08a00; }
.req.page { fill: #1f6fb2; } .req.robots { fill: #7b3fa0; }
.req.throttled { fill: #e08a00; } .req.failed { fill: #444; } .req.answer { fill: #8d5a2b; }
.req.robots.throttled { fill: #e08a00; stroke: #7b3fa0; stroke-width: 1; }
.req.short { fill: #c62828; }
#hostbox { max-height: 24em; overflow-y: auto; max-width: 100%; display: inline-block; }
.wait { fill: #c8c8c8; } .backoff { fill: #f3b25b; }
.short { stroke: #c62828; stroke-width: 3; }
.legend span { display: inline-block; margin-right: 1.2em; }
.legend i { display: inline-block; width: 12px; height: 10px; margin-right: 4px;
  vertical-align: middle; }
</style></head><body>
"""

_LEGEND = """<h2>Timelines</h2><p class="legend">
<span><i style="background:#1f6fb2"></i>page</span>
<span><i style="background:#7b3fa0"></i>robots.txt</span>
<span><i style="background:#e08a00"></i>429/503 answer</span>
<span><i style="background:#8d5a2b"></i>other failed answer</span>
<span><i style="background:#444"></i>no answer / error</span>
<span><i style="background:#b9d4f0"></i>interval owed after a page</span>
<span><i style="background:#c8c8c8"></i>wait for the turn</span>
<span><i style="background:#f3b25b"></i>wait: back-off / Retry-After</span>
<span><i style="background:#c62828"></i>gap shorter than the interval</span>
</p>
"""

# Sorts the host table and the timelines by a column, largest first (the host name:
# the page's own order); "#sort=NAME" in the address sorts at load.
_SCRIPT = """<script>
(function () {
  function order(attr) {
    return function (a, b) {
      var first = parseFloat(a.dataset.order) - parseFloat(b.dataset.order);
      if (attr === "key") { return first; }
      return (parseFloat(b.dataset[attr]) - parseFloat(a.dataset[attr])) || first;
    };
  }
  function sortIn(box, selector, attr) {
    var items = Array.prototype.slice.call(box.querySelectorAll(selector));
    items.sort(order(attr)).forEach(function (item) { box.appendChild(item); });
    var note = box.querySelector(":scope > p.hint");
    if (note) { box.appendChild(note); }
  }
  function sortBy(attr) {
    sortIn(document.getElementById("timelines"), "section.host", attr);
    sortIn(document.querySelector("#hosts tbody"), "tr", attr);
    Array.prototype.forEach.call(document.querySelectorAll("#hosts button"), function (b) {
      b.classList.toggle("active", b.dataset.sort === attr);
    });
    document.body.dataset.sorted = attr;
  }
  Array.prototype.forEach.call(document.querySelectorAll("#hosts button"), function (b) {
    b.addEventListener("click", function () { sortBy(b.dataset.sort); });
  });
  var asked = /^#sort=(\\w+)$/.exec(location.hash);
  if (asked) { sortBy(asked[1]); }
})();
</script>"""
