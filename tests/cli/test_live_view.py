"""The live view of ``robotgate fetch``: rate, ETA, pages/skipped/errors, hosts active,
waiting and backing off; off a terminal, one line every ``--log-every`` seconds."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path

import pytest

from robotgate import RobotGate
from robotgate.cli import main
from robotgate.cli.report import LogLines, Progress, Rate, live_parts
from robotgate.crawl.results import CrawlResult, CrawlSummary
from testbed.server import BenchServer, HostPlan

AGENT = "TestBot/1.0 (+https://example.com/bot)"


def summary(**fields: object) -> CrawlSummary:
    s = CrawlSummary()
    for name, value in fields.items():
        setattr(s, name, value)
    return s


def test_the_rate_looks_back_over_its_window() -> None:
    rate = Rate(window=10.0)
    assert rate.update(0.0, 0) is None  # nothing to tell from one moment
    assert rate.update(0.5, 3) is None  # nor from half a second
    assert rate.update(2.0, 10) == 5.0
    rate.update(12.0, 20)
    rate.update(14.0, 40)
    # Samples further back than needed are dropped: 30 URLs since the one at 2.0.
    assert rate.update(20.0, 40) == pytest.approx(30 / 18)


def test_the_eta_comes_once_the_input_length_is_known() -> None:
    s = summary(read=100, pages=30, skipped=5, errors=5, hosts_active=3, hosts_waiting=7,
                hosts_backing_off=2)
    reading = live_parts(s, 4.0)
    assert reading[0] == "40/100+ done" and "4.0/s" in reading
    assert not any(part.startswith("ETA") for part in reading)
    s.input_done = True
    known = live_parts(s, 4.0)
    assert known[:3] == ["40/100 done", "4.0/s", "ETA 15.0s"]
    assert known[3:] == ["30 fetched", "5 refused", "5 errors",
                         "hosts: 3 active, 7 waiting, 2 backing off"]
    assert not any("/s" in part for part in live_parts(s, None))  # no rate yet: none said
    # Failed URLs and unreachable robots.txt are said once there are some, apart.
    s.failed, s.unreachable, s.pages = 2, 3, 25
    assert live_parts(s, 4.0)[3:7] == ["25 fetched", "2 failed", "5 refused",
                                       "3 robots.txt unreachable"]


def test_the_bar_on_a_terminal_shows_it_all() -> None:
    s = summary(read=10, pages=4, input_done=True, hosts_active=1, hosts_waiting=2)
    bar = Progress(io.StringIO(), s)
    bar.rate.update(s.started - 2.0, 0)  # 4 done in the last 2 seconds
    text = bar.render(200)
    assert text.startswith("[")
    assert "4/10 done" in text and "/s" in text and "ETA" in text
    assert "hosts: 1 active, 2 waiting, 0 backing off" in text


@pytest.mark.slow
async def test_off_a_terminal_a_line_comes_every_log_every_seconds() -> None:
    stream = io.StringIO()
    s = summary(read=8, pages=2, input_done=True)
    lines = LogLines(stream, s, 0.05)
    lines.start()
    await asyncio.sleep(0.3)
    await lines.stop()
    written = stream.getvalue().splitlines()
    assert 2 <= len(written) <= 8
    assert all(re.match(r"robotgate: [\d.]+s: 2/8 done, ", line) for line in written)
    assert "hosts: 0 active" in written[-1]


@pytest.mark.slow
async def test_fetch_off_a_terminal_logs_as_it_goes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with BenchServer([HostPlan("allow")]) as srv:
        urls = [srv.url(0, f"/page/{i}") for i in range(6)]
        out = str(tmp_path / "out.jsonl")
        args = ["fetch", "--agent", AGENT, "--store", "memory", "--delay", "0.2",
                "--log-every", "0.3", "-o", out, *urls]
        code = await asyncio.to_thread(main, args)
        err = capsys.readouterr().err  # capsys's stderr is no terminal
        assert code == 0
        logged = [line for line in err.splitlines() if re.match(r"robotgate: [\d.]+s: ", line)]
        assert len(logged) >= 2, err
        assert all("done" in line and "fetched" in line and "hosts:" in line for line in logged)
        code = await asyncio.to_thread(main, [*args, "-q"])
        assert code == 0 and capsys.readouterr().err == ""


@pytest.mark.slow
async def test_the_crawl_counts_hosts_active_waiting_and_backing_off() -> None:
    async with BenchServer([HostPlan("allow", page_status=429, page_status_times=1),
                            HostPlan("allow")]) as srv:
        seen: list[tuple[int | None, int, int, int]] = []
        s = CrawlSummary()

        def on_result(result: CrawlResult) -> None:
            seen.append((result.status, s.hosts_active, s.hosts_waiting, s.hosts_backing_off))

        async with RobotGate(AGENT, delay=0.1) as gate:
            urls = [srv.url(h, f"/page/{i}") for i in range(3) for h in range(2)]
            await gate.crawl(urls, lambda url, resp: None, on_result=on_result, summary=s)
    # When the 429 is told, its host waits for the back-off: counted as backing off.
    after_429 = [row for row in seen if row[0] == 429]
    assert len(after_429) == 1 and after_429[0][3] == 1 and after_429[0][2] >= 1
    assert (s.hosts_active, s.hosts_waiting, s.hosts_backing_off) == (0, 0, 0)
