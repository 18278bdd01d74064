"""What ``robotgate fetch`` says each URL came to, and ``robotgate report`` says the same.

A dead host's robots.txt cannot be fetched: its URLs are disallowed (RFC 9309) but
counted and told as "robots.txt unreachable", with the error, apart from the URLs a
rule refuses; a run that could fetch nothing exits 1.  A URL is counted once, by its
last attempt: a 429 that outlasted its retries is failed, not fetched.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from robotgate.cli.html_report import read_lines, read_story, render
from robotgate.cli.report import URL_OUTCOMES
from testbed.server import BenchServer, HostPlan
from tests.cli.test_cli import AGENT, json_lines, run_async

FETCH = ["fetch", "--agent", AGENT, "--store", "memory", "--delay", "0"]


def dead_url(path: str = "/page/1") -> str:
    """A URL of a loopback port nobody listens on: connection refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


def totals(err: str) -> dict[str, int]:
    """The summary's last line, ``done in ...: N URLs: a fetched, b failed, ...``, as
    field to number."""
    line = [text for text in err.splitlines() if text.startswith("done in ")][-1]
    found = {field: int(re.search(rf"([\d,]+) {re.escape(label)}\b", line)  # type: ignore[union-attr]
                        .group(1).replace(",", ""))
             for field, label in URL_OUTCOMES}
    retried = re.search(r"([\d,]+) attempts? retried", line)
    found["retried"] = int(retried.group(1)) if retried else 0
    return found


async def test_a_dead_host_is_robots_txt_unreachable_and_the_run_fails(
        capsys: pytest.CaptureFixture[str]) -> None:
    dead = dead_url()
    code, out, err = await run_async([*FETCH, dead, dead.replace("/page/1", "/page/2")],
                                     capsys)
    assert code == 1  # nothing it was asked could be fetched
    records = json_lines(out)
    assert [r["outcome"] for r in records] == ["unreachable"] * 2
    assert all("Connect" in str(r["reason"]) for r in records)  # the error, in each line
    [robots] = [request for r in records for request in r.get("robots_txt", [])]  # type: ignore[attr-defined]
    assert str(robots["error"]).startswith("ClientConnectorError: Cannot connect to host")
    assert totals(err) == dict(pages=0, failed=0, skipped=0, unreachable=2, errors=0,
                               retried=0)
    # The summary says what went wrong, not "skipped by robots.txt".
    assert "robots.txt could not be fetched (ClientConnectorError" in err
    assert "skipped by robots.txt" not in err


@pytest.mark.slow
async def test_a_rule_refusal_is_an_answer_and_a_page_fetched_is_success(
        capsys: pytest.CaptureFixture[str]) -> None:
    async with BenchServer([HostPlan("partial")]) as srv:
        refused = [srv.url(0, "/private/4")]
        code, _, err = await run_async([*FETCH, *refused], capsys)
        assert code == 0, err  # robots.txt's rules answered: no failure
        assert totals(err)["skipped"] == 1
        code, _, err = await run_async([*FETCH, srv.url(0, "/page/1"), dead_url()], capsys)
        assert code == 0, err  # some page was fetched; the dead host is said, not fatal
        assert (totals(err)["pages"], totals(err)["unreachable"]) == (1, 1)


@pytest.mark.slow
async def test_the_summary_and_the_report_count_the_same_urls(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plans = [HostPlan("partial"), HostPlan("allow", page_status=429, page_retry_after=0),
             HostPlan("500")]
    crawl = tmp_path / "crawl.jsonl"
    async with BenchServer(plans) as srv:
        urls = [srv.url(0, f"/page/{i}") for i in range(3)] + [
            srv.url(0, "/private/4"), srv.url(0, "/nothing-here-404"),
            srv.url(1, "/page/1"), srv.url(2, "/page/1"), dead_url()]
        code, _, err = await run_async(
            [*FETCH, "--retries", "1", "-o", str(crawl), *urls], capsys)
    assert code == 0, err
    said = totals(err)
    records = json_lines(crawl.read_text())
    throttled = [r for r in records if r["url"] == srv.url(1, "/page/1")]
    # Asked twice, 429 both times: one attempt retried, and the URL failed.
    assert [(r["status"], r.get("retried", False)) for r in throttled] == [
        (429, True), (429, False)]
    assert said["failed"] >= 1 and said["retried"] == 1
    assert said["unreachable"] == 2 and said["skipped"] == 1  # the 500 host and the dead one
    assert sum(said[field] for field, _ in URL_OUTCOMES) == len(urls)
    with crawl.open("rb") as stream:
        story = read_story(read_lines(stream))
    told = {field: story.total(field) for field, _ in URL_OUTCOMES}
    told["retried"] = story.total("retried")
    assert told == said
    page = render(story)
    for field, label in URL_OUTCOMES:
        assert re.search(rf"<tr><th>{re.escape(label)}</th><td>{said[field]:,} \(", page)
