"""``robotgate report``: one self-contained HTML page about a crawl, from its JSON lines.

:func:`read_story` rebuilds, per politeness key, the requests of a crawl from
the lines ``robotgate fetch`` wrote (pages and robots.txt requests, when each
went and came back, what it waited for, the interval its server was owed);
:func:`check_gaps` finds any two requests to one server closer than that
interval; :func:`render` draws it all: a summary, then one timeline per host as
inline SVG, sortable with a few lines of inline JavaScript.  No network: no
font, script or style comes from anywhere but the page itself.

Bounds: a line longer than :data:`MAX_LINE` is counted as unreadable, at most
:data:`MAX_REQUESTS` requests are kept (the rest counted), a timeline draws at
most :data:`MAX_MARKS` requests, and at most :data:`MAX_TIMELINES` hosts get one
(and every host with a gap too short).
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import IO, Any

from ..politeness.turns import BACKING_OFF
from .report import natural

__all__ = [
    "CrawlStory",
    "HostStory",
    "Request",
    "check_gaps",
    "read_lines",
    "read_story",
    "render",
]

MAX_LINE = 1 << 20  # bytes of one JSON line
MAX_REQUESTS = 2_000_000  # requests kept in memory across all hosts
MAX_MARKS = 4000  # requests drawn on one host's timeline
MAX_TIMELINES = 1000  # hosts drawn (and every host with a gap too short)
#: The lines give times to the millisecond: two starts that far apart may be one
#: millisecond closer than they were.
TOLERANCE = 0.0015
THROTTLED = frozenset({429, 503})

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


@dataclass(slots=True)
class HostStory:
    """One politeness key: its requests and tallies."""

    key: str
    requests: list[Request] = field(default_factory=list)
    pages: int = 0
    skipped: int = 0
    errors: int = 0
    throttled: int = 0  # 429 and 503 answers
    robots: int = 0  # robots.txt requests
    waited: float = 0.0
    backed_off: float = 0.0  # of waited, for back-off or Retry-After
    short_gaps: int = 0


@dataclass(slots=True)
class CrawlStory:
    """What the JSON lines of one crawl tell."""

    hosts: dict[str, HostStory] = field(default_factory=dict)
    lines: int = 0
    unreadable: int = 0  # not JSON, or not a crawl line
    invalid: int = 0  # lines of invalid URLs (no server)
    not_kept: int = 0  # requests past MAX_REQUESTS
    kept: int = 0
    waits: dict[str, float] = field(default_factory=dict)  # seconds by reason

    @property
    def short_gaps(self) -> int:
        return sum(host.short_gaps for host in self.hosts.values())

    def span(self) -> tuple[float, float] | None:
        """The first request's start and the last answer (or start)."""
        first = last = None
        for host in self.hosts.values():
            for request in host.requests:
                end = request.answered if request.answered is not None else request.started
                first = request.started if first is None else min(first, request.started)
                last = end if last is None else max(last, end)
        return (first, last) if first is not None and last is not None else None


def read_lines(stream: IO[bytes]) -> Iterator[str | None]:
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
        yield chunk.decode("utf-8", "replace")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def read_story(lines: Iterable[str | None]) -> CrawlStory:
    """The crawl the JSON lines tell; lines that are no crawl line are counted."""
    story = CrawlStory()
    for line in lines:
        if line is not None and not line.strip():
            continue
        story.lines += 1
        try:
            record = json.loads(line) if line is not None else None
        except ValueError:
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("url"), str):
            story.unreadable += 1
            continue
        key = _text(record.get("key"))
        if key is None:
            story.invalid += 1
            continue
        _add_line(story, key, record)
    check_gaps(story)
    return story


def _add_line(story: CrawlStory, key: str, record: dict[str, Any]) -> None:
    host = story.hosts.get(key)
    if host is None:
        host = story.hosts[key] = HostStory(key)
    robots = record.get("robots_txt")
    if isinstance(robots, list):
        for item in robots:
            if isinstance(item, dict):
                _add_robots(story, host, item)
    waited = max(0.0, _number(record.get("waited")) or 0.0)
    reason = _text(record.get("wait_reason")) or ""
    if waited > 0:
        host.waited += waited
        if reason in BACKING_OFF:
            host.backed_off += waited
        name = reason or "unsaid"
        story.waits[name] = story.waits.get(name, 0.0) + waited
    status = record.get("status")
    status = status if isinstance(status, int) and not isinstance(status, bool) else None
    error = _text(record.get("error"))
    if record.get("skipped") is not None:
        host.skipped += 1
    elif error is not None:
        host.errors += 1
    else:
        host.pages += 1
    if status in THROTTLED:
        host.throttled += 1
    started = _number(record.get("started"))
    if started is None:
        return  # no request went (skipped, or failed before it left)
    _keep(story, host, Request(
        record["url"], started, _number(record.get("answered")), status, error,
        waited=waited, wait_reason=reason, interval=_number(record.get("interval"))))


def _add_robots(story: CrawlStory, host: HostStory, item: dict[str, Any]) -> None:
    started = _number(item.get("started"))
    if started is None:
        return
    status = item.get("status")
    host.robots += 1
    if status in THROTTLED:
        host.throttled += 1
    _keep(story, host, Request(
        _text(item.get("url")) or "robots.txt", started, _number(item.get("answered")),
        status if isinstance(status, int) and not isinstance(status, bool) else None,
        _text(item.get("error")), robots=True))


def _keep(story: CrawlStory, host: HostStory, request: Request) -> None:
    if story.kept >= MAX_REQUESTS:
        story.not_kept += 1
        return
    story.kept += 1
    host.requests.append(request)


def check_gaps(story: CrawlStory) -> None:
    """Mark each request that started closer to its server's previous one than the
    interval owed: a page's own ``interval``, or for a robots.txt request the
    interval of the server's page before it (the gate keeps that one for it)."""
    for host in story.hosts.values():
        host.requests.sort(key=lambda request: request.started)
        host.short_gaps = 0
        owed: float | None = None
        previous: Request | None = None
        for request in host.requests:
            if not request.robots and request.interval is not None:
                owed = request.interval
            request.owed = owed
            if previous is not None:
                request.gap = request.started - previous.started
                request.short = owed is not None and request.gap < owed - TOLERANCE
                host.short_gaps += request.short
            previous = request


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


def render(story: CrawlStory, title: str = "robotgate crawl report") -> str:
    """The report as one HTML page (nothing loaded from elsewhere)."""
    span = story.span()
    hosts = sorted(story.hosts.values(), key=lambda h: (-h.pages - h.skipped, natural(h.key)))
    parts = [_HEAD.replace("TITLE", _escape(title)), f"<h1>{_escape(title)}</h1>"]
    parts.append(_summary(story, span))
    parts.append(_host_table(hosts))
    parts.append(_LEGEND)
    parts.append('<div id="timelines">')
    drawn = 0
    for order, host in enumerate(hosts):
        if drawn < MAX_TIMELINES or host.short_gaps:
            parts.append(_host_section(host, span, order))
            drawn += 1
    if drawn < len(hosts):
        parts.append(f'<p class="hint">The timelines of {len(hosts) - drawn} more hosts '
                     "are left out: the table lists them all.</p>")
    parts.append("</div>")
    parts.append(_SCRIPT)
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _summary(story: CrawlStory, span: tuple[float, float] | None) -> str:
    hosts = story.hosts.values()
    pages = sum(h.pages for h in hosts)
    skipped = sum(h.skipped for h in hosts)
    errors = sum(h.errors for h in hosts)
    throttled = sum(h.throttled for h in hosts)
    robots = sum(h.robots for h in hosts)
    short = story.short_gaps
    rows = []
    if span is not None:
        rows.append(("crawl", f"{_when(span[0])} to {_when(span[1])} "
                              f"({_seconds(span[1] - span[0])})"))
    rows += [
        ("hosts", str(len(story.hosts))),
        ("pages", str(pages)),
        ("skipped by robots.txt", str(skipped)),
        ("errors", str(errors)),
        ("429/503 answers", str(throttled)),
        ("robots.txt requests", str(robots)),
    ]
    if story.waits:
        waits = ", ".join(f"{_seconds(s)} {reason}" for reason, s in
                          sorted(story.waits.items(), key=lambda kv: -kv[1]))
        rows.append(("waited for turns", waits))
    notes = []
    if story.invalid:
        notes.append(f"{story.invalid} invalid URLs")
    if story.unreadable:
        notes.append(f"{story.unreadable} unreadable lines")
    if story.not_kept:
        notes.append(f"{story.not_kept} requests past the first {MAX_REQUESTS} not drawn")
    if notes:
        rows.append(("lines", f"{story.lines}: " + ", ".join(notes)))
    body = "".join(f"<tr><th>{_escape(k)}</th><td>{_escape(v)}</td></tr>" for k, v in rows)
    if short:
        verdict = (f'<p id="verdict" class="bad">{short} gap{"s" if short != 1 else ""} '
                   "shorter than the interval owed: drawn in red below.</p>")
    else:
        verdict = ('<p id="verdict" class="good">No host was asked sooner than its interval '
                   "allowed.</p>")
    return f'<section id="summary"><table class="facts">{body}</table>{verdict}</section>'


_COLUMNS = (("host", "key"), ("pages", "pages"), ("skipped", "skipped"),
            ("errors", "errors"), ("429/503", "throttled"), ("robots.txt", "robots"),
            ("waited", "waited"), ("backing off", "backedoff"), ("short gaps", "short"))


def _host_table(hosts: list[HostStory]) -> str:
    head = "".join(
        f'<th><button type="button" data-sort="{attr}">{_escape(name)}</button></th>'
        for name, attr in _COLUMNS)
    rows = []
    for order, h in enumerate(hosts):
        bad = ' class="bad"' if h.short_gaps else ""
        rows.append(
            f'<tr {_data(h, order)}{bad}><td><a href="#{_anchor(h.key)}">{_escape(h.key)}</a>'
            f"</td><td>{h.pages}</td><td>{h.skipped}</td><td>{h.errors}</td>"
            f"<td>{h.throttled}</td><td>{h.robots}</td><td>{h.waited:.2f}</td>"
            f"<td>{h.backed_off:.2f}</td><td>{h.short_gaps}</td></tr>")
    return (f'<p class="hint">Sort the hosts (table and timelines) by a column: click its '
            f'name.</p><div id="hostbox"><table id="hosts"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def _anchor(key: str) -> str:
    return "host-" + "".join(c if c.isalnum() else "-" for c in key)


def _data(host: HostStory, order: int) -> str:
    """The attributes the page's script sorts by."""
    return (f'data-key="{_escape(host.key)}" data-order="{order}" data-pages="{host.pages}" '
            f'data-skipped="{host.skipped}" data-errors="{host.errors}" '
            f'data-throttled="{host.throttled}" data-robots="{host.robots}" '
            f'data-waited="{host.waited:.3f}" data-backedoff="{host.backed_off:.3f}" '
            f'data-short="{host.short_gaps}"')


def _host_section(host: HostStory, span: tuple[float, float] | None, order: int) -> str:
    data = _data(host, order)
    intervals = sorted({r.interval for r in host.requests if r.interval is not None})
    owed = ", ".join(_seconds(i) for i in intervals) or "unknown"
    heading = (f"<h2>{_escape(host.key)}</h2><p class=\"facts\">{host.pages} pages, "
               f"{host.skipped} skipped, {host.errors} errors, {host.throttled} answers "
               f"429/503, {host.robots} robots.txt requests, waited {host.waited:.2f} s "
               f"({host.backed_off:.2f} s backing off); interval owed: {owed}")
    if host.short_gaps:
        heading += f'; <strong class="bad">{host.short_gaps} gaps shorter than owed</strong>'
    heading += "</p>"
    svg = _timeline(host, span) if span is not None and host.requests else (
        '<p class="hint">No request went to this host.</p>')
    return (f'<section class="host" id="{_anchor(host.key)}" {data}>{heading}{svg}'
            "</section>")


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
    drawn = host.requests[:MAX_MARKS]
    for request in drawn:
        start = x(request.started)
        if not request.robots and request.interval is not None:
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
        if request.short and request.gap is not None:
            marks.append(
                f'<line class="short" x1="{x(request.started - request.gap)}" y1="8" '
                f'x2="{start}" y2="8"><title>gap {request.gap:.3f} s, interval owed '
                f'{request.owed:g} s</title></line>')
        end = request.answered if request.answered is not None else request.started
        width = max((end - request.started) * scale, 3.0 if request.robots else 1.5)
        marks.append(
            f'<rect class="{_kind(request)}" x="{start}" y="22" width="{width:.2f}" '
            f'height="12"><title>{_escape(_describe(request, t0))}</title></rect>')
    more = ""
    if len(host.requests) > len(drawn):
        more = (f'<p class="hint">The first {len(drawn)} of {len(host.requests)} requests '
                "are drawn.</p>")
    return (f'<svg class="timeline" width="{_WIDTH + 2 * _LEFT}" height="{_HEIGHT}" '
            f'viewBox="0 0 {_WIDTH + 2 * _LEFT} {_HEIGHT}" role="img" '
            f'aria-label="requests to {_escape(host.key)} over time">{"".join(marks)}</svg>{more}')


def _kind(request: Request) -> str:
    if request.short:
        return "req short"
    if request.robots:
        return "req robots throttled" if request.status in THROTTLED else "req robots"
    if request.status in THROTTLED:
        return "req throttled"
    if request.error is not None or request.status is None:
        return "req failed"
    return "req page"


def _describe(request: Request, t0: float) -> str:
    what = "robots.txt " if request.robots else ""
    text = f"{what}{request.url} at +{request.started - t0:.3f} s"
    if request.status is not None:
        text += f": {request.status}"
    if request.error:
        text += f": {request.error}"
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
h1 { font-size: 1.4em; } h2 { font-size: 1.05em; margin: 0.2em 0; font-family: monospace; }
table { border-collapse: collapse; }
table.facts th { text-align: left; padding-right: 1em; font-weight: 600; }
#hosts td, #hosts th { padding: 2px 8px; text-align: right; border-bottom: 1px solid #ddd; }
#hosts td:first-child { text-align: left; font-family: monospace; }
#hosts button { font: inherit; font-weight: 600; border: 0; background: none;
  cursor: pointer; padding: 0; }
#hosts button.active { text-decoration: underline; }
.good { color: #18794e; font-weight: 600; } .bad { color: #c62828; font-weight: 600; }
tr.bad td { color: #c62828; }
.hint { color: #666; font-size: 0.9em; }
section.host { margin: 0.8em 0; padding-top: 0.4em; border-top: 1px solid #eee; }
section.host p.facts { margin: 0 0 0.2em; color: #444; font-size: 0.9em; }
svg.timeline { display: block; background: #fafafa; }
.grid { stroke: #e2e2e2; } .tick { font-size: 9px; fill: #888; text-anchor: middle; }
.owed { fill: #b9d4f0; opacity: 0.7; }
.req.page { fill: #1f6fb2; } .req.robots { fill: #7b3fa0; }
.req.throttled { fill: #e08a00; } .req.failed { fill: #444; }
.req.robots.throttled { fill: #e08a00; stroke: #7b3fa0; stroke-width: 1; }
.req.short { fill: #c62828; }
#hostbox { max-height: 24em; overflow-y: auto; display: inline-block; }
.wait { fill: #c8c8c8; } .backoff { fill: #f3b25b; }
.short { stroke: #c62828; stroke-width: 3; }
.legend span { display: inline-block; margin-right: 1.2em; }
.legend i { display: inline-block; width: 12px; height: 10px; margin-right: 4px;
  vertical-align: middle; }
</style></head><body>"""

_LEGEND = """<p class="legend">
<span><i style="background:#1f6fb2"></i>page</span>
<span><i style="background:#7b3fa0"></i>robots.txt</span>
<span><i style="background:#e08a00"></i>429/503 answer</span>
<span><i style="background:#444"></i>no answer / error</span>
<span><i style="background:#b9d4f0"></i>interval owed after a page</span>
<span><i style="background:#c8c8c8"></i>wait for the turn</span>
<span><i style="background:#f3b25b"></i>wait: back-off / Retry-After</span>
<span><i style="background:#c62828"></i>gap shorter than the interval</span>
</p>"""

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
