"""``robotgate report``: the HTML page a person opens after a crawl.

Pure tests feed crafted JSON lines to the builder (a gap shorter than the interval
IS drawn red); the Chromium tests render the report of a real loopback crawl in
headless Chromium (Debian's ``chromium``), and skip, saying why, without it.
"""

from __future__ import annotations

import asyncio
import functools
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from robotgate.cli import main
from robotgate.cli.html_report import MAX_LINE, read_lines, read_story, render
from testbed.server import BenchServer, HostPlan

AGENT = "TestBot/1.0 (+https://example.com/bot)"


def page(key: str, started: float, interval: float = 1.0, status: int = 200,
         **extra: Any) -> str:
    host = key.split(":", 1)[1]
    record = {"url": f"http://{host}/p{started}", "key": key, "status": status,
              "started": started, "answered": started + 0.05, "waited": 0.0,
              "interval": interval, **extra}
    return json.dumps(record)


def robots(started: float, status: int = 200) -> dict[str, Any]:
    return {"url": "http://a.example/robots.txt", "started": started,
            "answered": started + 0.02, "status": status}


def story_of(*lines: str) -> Any:
    return read_story(read_lines(io.BytesIO("\n".join(lines).encode() + b"\n")))


def shorts(html: str) -> int:
    return len(re.findall(r'<rect class="req short"', html))


# -- the builder ------------------------------------------------------------------------


def test_a_gap_shorter_than_the_interval_is_drawn_red() -> None:
    story = story_of(
        page("host:a.example", 100.0), page("host:a.example", 100.3),  # 0.3 s < 1 s owed
        page("host:a.example", 101.3),
        page("host:b.example", 100.0), page("host:b.example", 101.0),  # exactly the interval
    )
    a, b = story.hosts["host:a.example"], story.hosts["host:b.example"]
    assert [r.short for r in a.requests] == [False, True, False]
    assert a.requests[1].gap == pytest.approx(0.3) and a.requests[1].owed == 1.0
    assert b.short_gaps == 0 and story.short_gaps == 1
    html = render(story)
    assert shorts(html) == 1
    assert len(re.findall(r'<line class="short"', html)) == 1
    assert 'id="verdict" class="bad">1 gap shorter' in html
    assert re.search(r'<tr data-key="host:a.example"[^>]*class="bad"', html)


def test_no_short_gap_no_red() -> None:
    html = render(story_of(page("host:a.example", 100.0), page("host:a.example", 101.5)))
    assert shorts(html) == 0 and '<line class="short"' not in html
    assert 'id="verdict" class="good"' in html


def test_robots_txt_requests_count_as_requests_to_the_server() -> None:
    story = story_of(
        # robots.txt half a second before the first page, owed 1 s: too close.
        page("host:a.example", 100.0, robots_txt=[robots(99.5)]),
        # a robots.txt refetch keeps the interval of the page before it (2 s).
        page("host:a.example", 102.0, interval=2.0),
        page("host:a.example", 106.0, interval=2.0, robots_txt=[robots(104.0, 503)]),
        # 1 s after a page owed 2 s: too close, robots.txt or not.
        page("host:b.example", 100.0, interval=2.0, robots_txt=[robots(101.0)]),
    )
    host = story.hosts["host:a.example"]
    assert host.robots == 2 and host.throttled == 1
    assert [(r.robots, r.short) for r in host.requests] == [
        (True, False), (False, True), (False, False), (True, False), (False, False)]
    assert host.requests[3].owed == 2.0
    assert [r.short for r in story.hosts["host:b.example"].requests] == [False, True]
    html = render(story)
    assert html.count('class="req robots"') == 1
    assert html.count('class="req robots throttled"') == 1
    assert shorts(html) == 2


def test_the_lines_millisecond_rounding_is_no_short_gap() -> None:
    story = story_of(page("host:a.example", 100.0), page("host:a.example", 100.999),
                     page("host:a.example", 101.997))
    assert [r.short for r in story.hosts["host:a.example"].requests] == [False, False, True]


def test_marks_throttled_answers_and_back_offs() -> None:
    story = story_of(
        page("host:a.example", 100.0, status=429),
        page("host:a.example", 103.0, waited=2.9, wait_reason="back-off"),
        page("host:a.example", 104.0, waited=0.9, wait_reason="delay"),
    )
    host = story.hosts["host:a.example"]
    assert host.throttled == 1 and host.backed_off == pytest.approx(2.9)
    assert host.waited == pytest.approx(3.8)
    assert story.waits == {"back-off": pytest.approx(2.9), "delay": pytest.approx(0.9)}
    html = render(story)
    assert html.count('class="req throttled"') == 1
    assert html.count('<rect class="backoff"') == 1 and html.count('<rect class="wait"') == 1


def test_skipped_and_failed_lines_are_counted_not_drawn() -> None:
    story = story_of(
        json.dumps({"url": "http://a.example/x", "key": "host:a.example",
                    "skipped": "disallowed", "waited": 0.0}),
        json.dumps({"url": "http://a.example/y", "key": "host:a.example",
                    "error": "ClientConnectorError", "started": 100.0, "waited": 0.0}),
        json.dumps({"url": "nope", "error": "invalid URL 'nope'"}),
    )
    host = story.hosts["host:a.example"]
    assert (host.pages, host.skipped, host.errors, len(host.requests)) == (0, 1, 1, 1)
    assert story.invalid == 1
    assert render(story).count('class="req failed"') == 1


def test_hostile_lines_get_a_definite_answer() -> None:
    evil = "<script>alert(1)</script>"
    story = read_story(read_lines(io.BytesIO(b"\n".join([
        b"not json",
        b"[1, 2]",
        b'{"no": "url"}',
        b'{"url": "http://a/", "key": "host:a", "started": "soon", "waited": "long"}',
        b'{"url": "http://a/", "key": "host:a", "started": null, "status": true}',
        b'{"url": "x", "key": "k", "robots_txt": [1, {"started": null}, "x"]}',
        b"x" * (MAX_LINE + 10),
        json.dumps({"url": f"http://a/{evil}", "key": f"host:{evil}", "started": 1.0,
                    "status": 200, "interval": 1.0, "error": evil, "waited": 1.0,
                    "wait_reason": evil}).encode(),
    ]) + b"\n")))
    assert story.unreadable == 4 and story.lines == 8
    assert story.hosts["host:a"].requests == []  # no time that can be read: no request
    html = render(story, title=evil)
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.mark.parametrize(("field", "bad"), [
    ("started", "1e308"), ("started", str(2**63)), ("started", "-1e308"), ("started", "1e400"),
    ("answered", "1e308"), ("waited", "1e308"), ("interval", str(2**63)), ("interval", "-5"),
    ("robots_txt", '[{"started": 1e308}]'),
])
def test_a_number_no_crawl_wrote_names_its_line_and_exits_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, bad: str) -> None:
    record = json.loads(page("host:a.example", 3.0))
    record[field] = "BAD"
    line = json.dumps(record).replace('"BAD"', bad)  # as written, not as Python would
    crawl = tmp_path / "crawl.jsonl"
    crawl.write_text(f"{page('host:a.example', 1.0)}\n\n{page('host:a.example', 2.0)}\n"
                     f"{line}\n")
    assert main(["report", str(crawl)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1
    assert err.startswith(f"robotgate: error: {str(crawl)!r}, line 4: ")  # the blank counts
    assert repr(field if field != "robots_txt" else "started") in err
    assert not (tmp_path / "crawl.html").exists()


def test_brackets_nested_past_reading_name_their_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    crawl = tmp_path / "crawl.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    crawl.write_text(f"{page('host:a.example', 1.0)}\n{deep}\n"
                     f'{{"url": "http://a.example/", "x": {deep}}}\n')
    assert main(["report", str(crawl)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1
    assert err.startswith(f"robotgate: error: {str(crawl)!r}, line 2: nested deeper")


def test_the_page_loads_nothing_from_elsewhere() -> None:
    html = render(story_of(page("host:a.example", 100.0, robots_txt=[robots(99.0)])))
    assert not re.search(r"""\s(src|href)\s*=\s*["']?(https?:|//)""", html, re.IGNORECASE)
    assert not re.search(r"<link|@import|url\(|<iframe|<img", html, re.IGNORECASE)
    assert html.count("<script>") == 1 and "<script src" not in html


# -- the command ---------------------------------------------------------------------------


def test_report_exit_status_says_whether_every_gap_kept_its_interval(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(page("host:a.example", 1.0) + "\n" + page("host:a.example", 2.0) + "\n")
    assert main(["report", str(good)]) == 0
    assert (tmp_path / "good.html").read_text().startswith("<!DOCTYPE html>")
    assert "no host asked sooner than its interval allowed" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(page("host:a.example", 1.0) + "\n" + page("host:a.example", 1.2) + "\n")
    out = tmp_path / "out" / "bad.html"
    out.parent.mkdir()
    assert main(["report", str(bad), "-o", str(out)]) == 1
    assert "1 gap shorter than the interval owed" in capsys.readouterr().err
    assert shorts(out.read_text()) == 1


def test_the_report_is_never_written_through_a_planted_link(tmp_path: Path) -> None:
    crawl = tmp_path / "good.jsonl"
    crawl.write_text(page("host:a.example", 1.0) + "\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    # A link where a predictable temporary name would be (this process's id).
    (tmp_path / f".good.html.{os.getpid()}.tmp").symlink_to(victim)
    assert main(["report", "-q", str(crawl)]) == 0
    assert victim.read_text() == "keep me"
    report = tmp_path / "good.html"
    assert not report.is_symlink() and report.read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == [
        f".good.html.{os.getpid()}.tmp"]  # the planted link, and no temporary file left


def test_report_mistakes_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("robotgate: error: cannot read") and err.count("\n") == 1
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(["report", str(empty)]) == 2
    assert "no crawl line" in capsys.readouterr().err
    assert main(["report"]) == 2
    crawl = tmp_path / "crawl.html"  # the default output never overwrites the input
    crawl.write_text(page("host:a.example", 1.0) + "\n")
    assert main(["report", "-q", str(crawl)]) == 0
    assert (tmp_path / "crawl.html.report.html").exists()
    assert crawl.read_text().startswith("{")


# -- in Chromium -----------------------------------------------------------------------------


CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Debian's chromium (apt-get install -y chromium) to render "
    "the report")


def plans() -> list[HostPlan]:
    """30 hosts: three answer 429 to their first two pages, one answers 500 to every
    page, one answers 503 for its robots.txt, two ask a Crawl-delay, a few disallow
    /private/."""
    out = []
    for h in range(30):
        if h == 3:
            out.append(HostPlan("503_retry", retry_after=1))
        elif h in (5, 6):
            out.append(HostPlan("crawl_delay", crawl_delay=0.3))
        elif h in (8, 9, 10):
            out.append(HostPlan("allow", page_status=429, page_status_times=2))
        elif h == 12:
            out.append(HostPlan("allow", page_status=500))  # failed answers, not pages
        elif h % 4 == 1:
            out.append(HostPlan("partial"))
        else:
            out.append(HostPlan("allow"))
    return out


def chromium(tmp_path: Path, *args: str, scrollbars: bool = False) -> str:
    assert CHROMIUM is not None
    hide = [] if scrollbars else ["--hide-scrollbars"]
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", *hide,
         f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True, text=True, timeout=120, check=False,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.soak  # a 30-host crawl and Chromium: CI runs it every time
@needs_chromium
async def test_the_report_of_a_30_host_crawl_renders_in_chromium(tmp_path: Path) -> None:
    crawl = tmp_path / "crawl.jsonl"
    async with BenchServer(plans()) as srv:
        urls = [srv.url(h, f"/page/{i}") for i in range(3) for h in range(30)]
        urls.append(srv.url(1, "/private/1"))
        urls.append(srv.url(5, "/private/" + "long-path-segment-" * 12))
        code = await asyncio.to_thread(main, [
            "fetch", "--agent", AGENT, "--store", "memory", "-q", "--delay", "0.1",
            "-o", str(crawl), *urls])
    assert code == 0
    report = tmp_path / "report.html"
    assert await asyncio.to_thread(main, ["report", "-q", str(crawl), "-o", str(report)]) == 0

    # The script sorts at load when asked: the hosts with the most 429/503 first.
    dom = await asyncio.to_thread(chromium, tmp_path, "--dump-dom",
                                  report.as_uri() + "#sort=throttled")
    sections = re.findall(r'<section class="host"[^>]*>', dom)
    assert len(sections) == 30  # one timeline per host
    assert dom.count('<svg class="timeline"') == 30
    assert 'id="verdict" class="good">No host was asked sooner' in dom
    assert dom.count('class="req robots throttled"') >= 1  # the 503 robots.txt
    assert dom.count('class="req throttled"') == 6  # two 429s on each of three hosts
    assert dom.count('<rect class="backoff"') >= 3
    assert "crawl-delay" in dom and 'class="req short"' not in dom
    assert dom.count('class="req answer"') == 3  # the three 500s, apart from the pages
    assert "<td>500 Internal Server Error</td><td>3</td>" in dom
    # Refusals by rule and line (two robots.txt files), each with its URLs; apart, the
    # site whose robots.txt answered 503 (unreachable: not asked).
    assert "<h2>Refused by robots.txt: 2</h2>" in dom
    for reason, count in (("Disallow: /private/ (line 2)", 1),
                          ("Disallow: /private/ (line 3)", 1)):
        assert re.search(rf"<td>{re.escape(reason)}<div[^>]*>[^<]*</div></td><td>{count}</td>",
                         dom), reason
    assert re.search(r"<h2>robots.txt unreachable [^<]*: 3</h2>.*<td>robots.txt answered "
                     r"503: robots.txt is unreachable[^<]*</td><td>3</td>", dom)
    assert "/private/long-path-segment-" in dom  # among the examples

    assert 'data-sorted="throttled"' in dom
    order = [int(n) for n in re.findall(r'<section class="host"[^>]*data-throttled="(\d+)"',
                                        dom)]
    assert order == sorted(order, reverse=True) and order[0] >= 2
    first_row = re.search(r"<tbody><tr [^>]*data-throttled=\"(\d+)\"", dom)
    assert first_row is not None and int(first_row.group(1)) == order[0]

    # In a window 1000 px wide, its vertical scroll bar shown, the page needs no sideways
    # scrolling (measured on a copy that says its overflow in the DOM).
    measured = tmp_path / "measured.html"
    measured.write_text(report.read_text().replace("</body>", _OVERFLOW + "</body>"))
    dom = await asyncio.to_thread(functools.partial(
        chromium, tmp_path, "--dump-dom", "--window-size=1000,800", measured.as_uri(),
        scrollbars=True))
    overflow = re.search(r'data-overflow="(-?\d+)"', dom)
    assert overflow is not None and int(overflow.group(1)) <= 0, dom[:300]

    shot = tmp_path / "report.png"
    await asyncio.to_thread(chromium, tmp_path, f"--screenshot={shot}",
                            "--window-size=1100,1400", report.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


_OVERFLOW = """<script>
document.body.dataset.overflow = String(
  document.documentElement.scrollWidth - document.documentElement.clientWidth);
</script>"""
