"""``robotgate report`` of a large crawl: exact totals, bounded samples, what the page tells.

The lines are read one at a time; each host keeps tallies, the start of every request
(for the gap check) and a bounded sample in full.  These tests count what a log holds
and compare it with what the report says, make hosts larger than their sample, feed
the lines out of order, and look for the refusals, failed answers and errors.
"""

from __future__ import annotations

import io
import json
import random
import re
from typing import Any

import pytest

from robotgate.cli import html_report
from robotgate.cli.html_report import (
    MAX_MARKS,
    CrawlStory,
    read_lines,
    read_story,
    render,
)

T0 = 1_764_000_000.0


def line(key: str, path: str, **fields: Any) -> str:
    host = key.split(":", 1)[1]
    return json.dumps({"url": f"http://{host}{path}", "key": key, "waited": 0.0, **fields})


def fetched(key: str, n: int, started: float, status: int = 200, interval: float = 1.0,
            **extra: Any) -> str:
    return line(key, f"/p/{n}", status=status, started=started, answered=started + 0.05,
                interval=interval, **extra)


def refused(key: str, path: str, rule: str | None, number: int | None,
            outcome: str | None = None) -> str:
    fields: dict[str, Any] = {"skipped": "disallowed", "rule": rule, "line": number,
                              "reason": f"disallowed by {rule!r} (line {number})"}
    if outcome is not None:
        fields.update(rule=None, line=None, outcome=outcome,
                      reason="robots.txt answered 503: robots.txt is unreachable")
    return line(key, path, **fields)


def story_of(lines: list[str]) -> CrawlStory:
    return read_story(read_lines(io.BytesIO("\n".join(lines).encode() + b"\n")))


def summary_row(page: str, name: str) -> str:
    match = re.search(rf"<tr><th>{re.escape(name)}</th><td>([^<]*)</td>", page)
    assert match is not None, name
    return match.group(1)


def counted_log() -> tuple[list[str], dict[str, int]]:
    """A log whose every kind of line is counted as it is made."""
    rng = random.Random(7)
    lines: list[str] = []
    counts = dict(pages=0, refused=0, failed=0, errors=0, throttled=0, robots=0,
                  private=0, unreachable=0, status500=0, invalid=0, interrupted=0)
    clock = {f"host:h{i}.example": T0 + i for i in range(12)}
    for n in range(3000):
        key = f"host:h{n % 12}.example"
        roll = rng.random()
        started = clock[key]
        clock[key] += 1.0
        if roll < 0.05:
            lines.append(refused(key, f"/private/{n}", "Disallow: /private/", 2))
            counts["refused"] += 1
            counts["private"] += 1
        elif roll < 0.07:
            lines.append(refused(key, f"/x/{n}", None, None, outcome="unreachable"))
            counts["unreachable"] += 1
        elif roll < 0.10:
            lines.append(fetched(key, n, started, status=500))
            counts["failed"] += 1
            counts["status500"] += 1
        elif roll < 0.12:
            lines.append(fetched(key, n, started, status=429))
            counts["failed"] += 1
            counts["throttled"] += 1
        elif roll < 0.14:
            lines.append(line(key, f"/t/{n}", error="timed out: page not done within 30s",
                              started=started, interval=1.0))
            counts["errors"] += 1
        elif roll < 0.15:
            lines.append(json.dumps({"url": f"ftp://h/{n}",
                                     "error": f"invalid URL 'ftp://h/{n}'"}))
            counts["invalid"] += 1
        elif roll < 0.16:
            lines.append(json.dumps({"url": f"http://h0.example/i/{n}", "key": None,
                                     "error": "interrupted: the crawl ended before it"}))
            counts["interrupted"] += 1
        else:
            robots = []
            if n < 12:  # each host's robots.txt before its first page, an interval ahead
                robots = [{"url": "http://x/robots.txt", "started": started - 1.5,
                           "answered": started - 1.4, "status": 200}]
                counts["robots"] += 1
            lines.append(fetched(key, n, started, robots_txt=robots))
            counts["pages"] += 1
    lines += ["not json", '{"no": "url"}']
    return lines, counts


def test_the_totals_count_every_line() -> None:
    lines, counts = counted_log()
    story = story_of(lines)
    assert story.lines == len(lines) and story.unreadable == 2
    assert (story.invalid, story.interrupted) == (counts["invalid"], counts["interrupted"])
    for name, tally in (("pages", "pages"), ("skipped", "refused"), ("failed", "failed"),
                        ("unreachable", "unreachable"), ("errors", "errors"),
                        ("throttled", "throttled"), ("robots", "robots")):
        assert story.total(name) == counts[tally], name
    assert story.short_gaps == 0
    page = render(story)
    assert summary_row(page, "fetched").startswith(f"{counts['pages']:,} ")
    assert summary_row(page, "refused by robots.txt").startswith(f"{counts['refused']:,} ")
    assert summary_row(page, "robots.txt unreachable").startswith(
        f"{counts['unreachable']:,} (not asked")
    assert summary_row(page, "failed").startswith(f"{counts['failed']:,} ")
    assert summary_row(page, "errors").startswith(f"{counts['errors']:,} ")
    assert summary_row(page, "lines").startswith(f"{len(lines):,}: ")
    assert f"{counts['invalid']} invalid URLs" in summary_row(page, "lines")


def test_refusals_failed_answers_and_errors_are_told_apart_with_examples() -> None:
    lines, counts = counted_log()
    page = render(story_of(lines))
    refusals = page[page.index('<section id="refusals">'):
                    page.index('<section id="unreachable">')]
    assert re.search(rf"<td>Disallow: /private/ \(line 2\)(<div[^>]*>[^<]*</div>)?</td>"
                     rf"<td>{counts['private']:,}</td>", refusals)
    unreachable = page[page.index('<section id="unreachable">'):
                       page.index('<section id="failures">')]
    assert re.search(rf"<td>robots.txt answered 503[^<]*</td>"
                     rf"<td>{counts['unreachable']:,}</td>", unreachable)
    assert len(re.findall(r"<li>http://h\d+\.example/private/\d+</li>", refusals)) == 3
    failures = page[page.index('<section id="failures">'):page.index('<section id="errors">')]
    assert f"<td>500 Internal Server Error</td><td>{counts['status500']:,}</td>" in failures
    assert "<td>429 Too Many Requests</td>" in failures
    errors = page[page.index('<section id="errors">'):page.index('<section id="invalid">')]
    assert "<td>timed out<div" in errors
    assert f"</div></td><td>{counts['errors']:,}</td>" in errors


def test_a_500_answer_is_a_failed_answer_not_a_page() -> None:
    story = story_of([fetched("host:a.example", 1, T0), fetched("host:a.example", 2, T0 + 1,
                                                                status=500)])
    host = story.hosts["host:a.example"]
    assert (host.pages, host.failed, host.errors) == (1, 1, 0)
    page = render(story)
    assert 'class="req answer"' in page and page.count('class="req page"') == 1


def test_a_host_keeps_a_bounded_sample_and_checks_every_gap() -> None:
    total = MAX_MARKS * 10
    starts = [T0 + i * 1.0 for i in range(total)]
    for i in range(7, total, 97):  # a gap of 0.2 s where 1 s is owed: short
        starts[i] = starts[i - 1] + 0.2
    short = len(range(7, total, 97))
    lines = [fetched("host:big.example", i, s, status=500 if i % 50 == 0 else 200)
             for i, s in enumerate(starts)]
    random.Random(3).shuffle(lines)  # the order lines finish in is not the order of starts
    story = story_of(lines)
    host = story.hosts["host:big.example"]
    assert host.seen == total and host.pages + host.failed == total
    assert len(host.requests) == MAX_MARKS  # the sample, in full
    assert host.short_gaps == short == story.short_gaps
    assert len(host.shorts) == min(short, html_report.MAX_SHORT_MARKS)
    # The sampled requests know their gaps as the full check found them.
    for request in host.requests:
        assert request.short == (request.gap is not None and request.gap < 0.5)
    assert [r.started for r in host.requests] == sorted(r.started for r in host.requests)
    page = render(story)
    assert page.count('<line class="short"') == len(host.shorts)
    assert f"{MAX_MARKS:,} of {total:,} requests are drawn in full" in page
    assert page.count('class="req ') <= MAX_MARKS
    # Thin marks show where every request went, the 500s in their own colour.
    assert 'class="every page"' in page and 'class="every answer"' in page


def test_the_samples_of_many_hosts_stay_within_their_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_report, "MAX_MARKS", 40)
    monkeypatch.setattr(html_report, "SAMPLE_BUDGET", 400)
    lines = [fetched(f"host:h{n % 100}.example", n, T0 + n) for n in range(100 * 30)]
    story = story_of(lines)
    kept = sum(len(host.requests) for host in story.hosts.values())
    assert kept == story.kept <= 2 * 400 < len(lines)
    assert all(1 <= len(host.requests) <= 40 for host in story.hosts.values())
    assert story.total("pages") == len(lines)  # the totals count every line still


def test_past_the_budget_in_hosts_a_host_keeps_no_sample_but_its_marks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_report, "SAMPLE_BUDGET", 50)
    lines = [fetched(f"host:h{n % 200}.example", n, T0 + n) for n in range(200 * 3)]
    lines.append(fetched("host:h7.example", 9999, T0 + 407.3))  # 0.3 s after h7's last
    story = story_of(lines)
    assert story.kept == sum(len(h.requests) for h in story.hosts.values()) <= 2 * 50
    assert story.short_gaps == 1 and story.total("pages") == len(lines)
    page = render(story)
    assert page.count('<section class="host"') == 100
    assert page.count('class="every page"') >= 100 - 2 * 50


def test_the_page_is_bounded_whatever_the_number_of_hosts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_report, "MAX_TABLE", 30)
    monkeypatch.setattr(html_report, "MAX_TIMELINES", 10)
    lines = [fetched(f"host:h{n % 50}.example", n, T0 + n) for n in range(500)]
    lines.append(fetched("host:h49.example", 999, T0 + 499.1))  # a gap too short
    page = render(story_of(lines))
    assert page.count('<section class="host"') == 10
    assert len(re.findall(r'<tr data-key="', page)) == 30
    assert "20 more hosts, with 200 fetched" in page and "none of them slowed" in page
    assert "The timelines of 40 more hosts" in page
    # The host with a short gap comes first, in the table and the timelines.
    assert re.search(r'<tbody><tr data-key="host:h49.example"', page)
    assert re.search(r'<div id="timelines">\n<section class="host" id="host-host-h49-example"',
                     page)


def test_no_password_of_a_url_is_on_the_page() -> None:
    secret = "s3cr3t-pw"
    key = "host:a.example"
    url = f"http://bob:{secret}@a.example"
    lines = [
        json.dumps({"url": f"{url}/p", "key": key, "status": 200, "started": T0,
                    "answered": T0 + 0.1, "waited": 0.0, "interval": 1.0,
                    "robots_txt": [{"url": f"{url}/robots.txt", "started": T0 - 2,
                                    "status": 200}]}),
        json.dumps({"url": f"{url}/q", "key": key, "status": 500, "started": T0 + 1,
                    "waited": 0.0, "interval": 1.0}),
        json.dumps({"url": f"{url}/private/", "key": key, "skipped": "disallowed",
                    "rule": "Disallow: /private/", "line": 2, "reason": "disallowed"}),
        json.dumps({"url": f"{url}/t", "key": key, "started": T0 + 2, "waited": 0.0,
                    "error": f"ClientConnectorError: cannot reach {url}/t"}),
        json.dumps({"url": f"ftp://bob:{secret}@a.example/", "error": "invalid URL "
                    f"'ftp://bob:{secret}@a.example/': scheme must be http or https"}),
    ]
    page = render(story_of(lines))
    assert secret not in page
    assert "bob:***@a.example/private/" in page and "bob:***@a.example/q" in page


def test_the_same_log_gives_the_same_page() -> None:
    lines = [fetched(f"host:h{n % 3}.example", n, T0 + n) for n in range(MAX_MARKS * 5)]
    assert render(story_of(lines)) == render(story_of(lines))


def test_past_the_table_every_host_that_slowed_the_crawl_stays_whatever_its_size(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_report, "MAX_TABLE", 30)
    lines = [fetched(f"host:busy{n % 40}.example", n, T0 + n) for n in range(400)]
    lines += [
        fetched("host:throttled.example", 1, T0, status=429),
        fetched("host:backing.example", 1, T0, waited=30.0, wait_reason="back-off"),
        fetched("host:crawl-delay.example", 1, T0, interval=60.0),
        fetched("host:small.example", 1, T0),  # one page, nothing slowed: left out
    ]
    page = render(story_of(lines))
    keys = re.findall(r'<tr data-key="([^"]+)"', page)
    assert len(keys) == 33 and keys[:30] == [f"host:busy{n}.example" for n in range(30)]
    assert set(keys[30:]) == {"host:throttled.example", "host:backing.example",
                              "host:crawl-delay.example"}
    assert "11 more hosts, with 101 fetched, 0 failed" in page
    assert "none of them slowed the crawl" in page
    row = page[page.index('<tr data-key="host:crawl-delay.example"'):]
    assert 'data-owed="60"' in row[:row.index("</tr>")]


def test_the_waits_are_labelled_as_a_sum_over_requests() -> None:
    lines = [fetched(f"host:h{n}.example", n, T0, waited=100.0, wait_reason="delay")
             for n in range(50)]
    page = render(story_of(lines))
    said = summary_row(page, "waited for turns, summed over requests")
    assert said.startswith("1.4 h delay: the waits of 50 requests, added up")
    assert "waited (sum)" in page
