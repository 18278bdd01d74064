"""``robotgate fetch --crawl NAME`` resumes a named crawl; ``robotgate crawls`` shows it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from robotgate.cli.args import EXIT_USAGE
from robotgate.store.sqlite import SQLiteStore
from testbed.redis_server import RedisServer
from testbed.server import BenchServer, HostPlan
from tests.cli.test_cli import AGENT, json_lines, one_error_line, run, run_async


async def test_a_named_fetch_resumes_and_says_how_far_it_is(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = f"sqlite:{tmp_path / 'gate.sqlite3'}"
    fetch = ["fetch", "--agent", AGENT, "--store", store, "--delay", "0", "--crawl", "news"]
    async with BenchServer([HostPlan("allow", pages=20)] * 2) as srv:
        first = [srv.url(h, f"/page/{p}") for h in range(2) for p in range(3)]
        code, out, err = await run_async([*fetch, *first], capsys)
        assert code == 0, err
        assert len(json_lines(out)) == 6
        assert "crawl 'news': 0 done before, 6 done now (6 fetched), 0 still pending" in err
        # Again with more URLs, one of them a spelling of a URL done: only the new go out.
        more = [*first, srv.url(0, "/page/4"), srv.url(1, "/./page/4"),
                srv.url(0, "/page/1#again")]
        code, out, err = await run_async([*fetch, *more], capsys)
        assert code == 0, err
        assert sorted(r["url"] for r in json_lines(out)) == sorted(
            [srv.url(0, "/page/4"), srv.url(1, "/./page/4")])
        assert "crawl 'news': 6 done before, 2 done now (2 fetched), 0 still pending" in err
        requests = sum(h.page_requests for h in srv.stats().values())
    assert requests == 8

    code, out, err = await run_async(["crawls", "--store", store], capsys)
    assert code == 0 and out == "news: 0 queued, 0 in flight, 8 done, 0 skipped, 0 failed\n"
    code, out, err = await run_async(["crawls", "--store", store, "other"], capsys)
    assert code == 1 and "no crawl named 'other'" in one_error_line(err)
    code, out, err = await run_async(["crawls", "--store", store, "news", "--drop"], capsys)
    assert code == 0 and out == "dropped news\n"
    code, out, err = await run_async(["crawls", "--store", store], capsys)
    assert code == 0 and out == ""


@pytest.mark.slow
async def test_crawls_lists_and_drops_the_crawls_a_fleet_shares_in_redis(
        own_redis: RedisServer, capsys: pytest.CaptureFixture[str]) -> None:
    # A server of its own: the command reads the default prefix, as a fleet's workers do.
    from robotgate import RobotGate
    from robotgate.store.redis import RedisStore

    async def handler(url: str, resp: object) -> None:
        return None

    async with BenchServer([HostPlan("allow", pages=5)]) as srv:
        urls = [srv.url(0, f"/page/{p}") for p in range(3)]
        async with RobotGate(AGENT, store=RedisStore(own_redis.url), delay=0) as gate:
            await gate.crawl(urls, handler, name="news")
    store = ["--store", own_redis.url]
    code, out, err = await run_async(["crawls", *store], capsys)
    assert (code, out) == (0, "news: 0 queued, 0 in flight, 3 done, 0 skipped, 0 failed\n"), err
    code, out, err = await run_async(["crawls", *store, "news", "--drop"], capsys)
    assert (code, out) == (0, "dropped news\n"), err
    code, out, err = await run_async(["crawls", *store], capsys)
    assert (code, out) == (0, "") and "keeps no named crawls" in err


def test_drop_needs_a_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["crawls", "--store", "memory", "--drop"], capsys)
    assert code == 2 and "NAME" in one_error_line(err)


async def test_a_crawl_another_process_holds_is_one_usage_error_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "gate.sqlite3"
    fetch = ["fetch", "--agent", AGENT, "--store", f"sqlite:{path}", "--delay", "0",
             "--crawl", "news", "http://127.0.0.1:9/never-asked"]
    async with SQLiteStore(path) as holder:
        held = holder.crawl_state("news")
        await held.open()  # the lock another process would hold
        code, out, err = await run_async(fetch, capsys)
        await held.close()
    assert code == EXIT_USAGE and out == ""
    line = one_error_line(err)  # no traceback
    assert "'news'" in line and str(os.getpid()) in line
