"""Issue 57: TDMRep through the gate (``RobotGate(tdmrep=True)``).

``/.well-known/tdmrep.json`` is fetched once per origin, by robots.txt's rules;
each URL's decision, crawl record and ``robotgate fetch`` line say whether TDM
rights are reserved for it, with the policy URL and the source.  The sites below
are in the shape of the W3C TDMRep report's examples: a tdmrep.json of
location rules (most specific first), the ``tdm-reservation``/``tdm-policy``
headers, and the same pair as HTML meta tags.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from robotgate import RobotGate
from robotgate.cli.__init__ import main
from robotgate.crawl import CrawlResult
from tests.support.pages_site import Answer, PagesSite

AGENT = "MineBot/1.0 (+https://example.com/bot)"
TDMREP = "/.well-known/tdmrep.json"
POLICY = "https://provider.com/policies/policy.json"
IMAGES_POLICY = "https://provider.com/policies/images.json"

FILE = json.dumps([
    {"location": "/images/inventory/*", "tdm-reservation": 0},
    {"location": "/images/*", "tdm-reservation": 1, "tdm-policy": IMAGES_POLICY},
    {"location": "/text/*", "tdm-reservation": 1, "tdm-policy": POLICY},
])
ROBOTS = Answer("User-agent: *\nDisallow: /private\n", content_type="text/plain")
META = ('<html><head><meta name="tdm-reservation" content="1">'
        f'<meta name="tdm-policy" content="{POLICY}"></head><body>x</body></html>')


def _with_file(delay: float = 0.0) -> dict[str, Answer]:
    return {
        "/robots.txt": ROBOTS,
        TDMREP: Answer(FILE, content_type="application/json", delay=delay),
        "/images/inventory/1": Answer("<p>1</p>"),
        "/images/2": Answer("<p>2</p>"),
        "/text/3": Answer("<p>3</p>", headers={"tdm-reservation": "0"}),
        "/text/4": Answer("<p>4</p>"),
        "/other": Answer("<p>5</p>"),
        "/private/6": Answer("<p>6</p>"),
    }


def _without_file() -> dict[str, Answer]:
    return {
        "/robots.txt": ROBOTS,  # no tdmrep.json: 404
        "/h": Answer("<p>h</p>", headers={"tdm-reservation": "1", "tdm-policy": POLICY}),
        "/m": Answer(META),
        "/n": Answer("<p>n</p>"),
    }


def _file_down() -> dict[str, Answer]:
    return {"/robots.txt": ROBOTS, TDMREP: Answer("busy", status=503), "/p": Answer("<p>p</p>"),
            "/q": Answer("<p>q</p>", headers={"tdm-reservation": "0"})}


@pytest.mark.slow
async def test_the_reports_examples_through_a_crawl() -> None:
    records: dict[str, CrawlResult] = {}

    async def handler(url: str, resp: Any) -> None:
        await resp.read()

    async with (PagesSite(_with_file(), "127.0.0.1") as a,
                PagesSite(_without_file(), "127.0.0.2") as b,
                PagesSite(_file_down(), "127.0.0.3") as c):
        urls = [a.url(p) for p in ("/images/inventory/1", "/images/2", "/text/3", "/text/4",
                                   "/other", "/private/6")]
        urls += [b.url(p) for p in ("/h", "/m", "/n")] + [c.url("/p"), c.url("/q")]
        async with RobotGate(AGENT, delay=0, tdmrep=True) as gate:
            await gate.crawl(urls, handler, on_result=lambda r: records.__setitem__(r.url, r))
            decided = await gate.decide(a.url("/images/9"))
            forbidden = await gate.decide(a.url("/private/7"))
    tdm = {url: records[url].tdm for url in urls}

    def said(url: str) -> tuple[bool | None, str | None]:
        verdict = tdm[url]
        assert verdict is not None
        return verdict.reserved, verdict.policy

    assert said(a.url("/images/inventory/1")) == (False, None)  # the first rule that matches
    assert said(a.url("/images/2")) == (True, IMAGES_POLICY)
    assert said(a.url("/text/4")) == (True, POLICY)
    assert said(a.url("/text/3")) == (False, None)  # the page's header overrides the file
    assert said(a.url("/other")) == (None, None)  # no rule, nothing on the page
    assert said(b.url("/h")) == (True, POLICY)  # headers
    assert said(b.url("/m")) == (True, POLICY)  # meta tags
    assert said(b.url("/n")) == (None, None)
    assert said(c.url("/p")) == (None, None)  # unreachable: no file, so it says nothing
    assert said(c.url("/q")) == (False, None)  # the page's own statement still counts
    assert tdm[a.url("/private/6")] is None and records[a.url("/private/6")].kind == "skipped"

    def source(url: str) -> str:
        verdict = tdm[url]
        assert verdict is not None
        return verdict.source

    assert source(a.url("/images/2")) == f"{a.origin}{TDMREP}: the rule for location '/images/*'"
    assert "tdm-reservation: 0" in source(a.url("/text/3"))
    assert "overrides tdmrep.json" in source(a.url("/text/3"))
    assert source(a.url("/other")) == (
        f"{a.origin}{TDMREP} has no rule for this path; the page states no tdm-reservation")
    assert "tdm-policy" in source(b.url("/m")) and "<meta" in source(b.url("/m"))
    assert "tdmrep.json answered 404" in source(b.url("/n"))
    down = source(c.url("/p"))
    assert "tdmrep.json answered 503" in down and "unreachable" in down
    # The URL's decision says it too (from the file: no page was read).
    assert decided.allowed and decided.tdm is not None
    assert (decided.tdm.reserved, decided.tdm.policy) == (True, IMAGES_POLICY)
    assert not forbidden.allowed and forbidden.tdm is None
    # Once per origin, the failed one too (it is retried after the back-off).
    assert (a.hits[TDMREP], b.hits[TDMREP], c.hits[TDMREP]) == (1, 1, 1)
    assert a.hits["/private/6"] == 0  # TDMRep never makes the gate fetch what robots.txt forbids


@pytest.mark.slow
async def test_one_tdmrep_request_per_origin_under_50_concurrent_fetches() -> None:
    async with (PagesSite(_with_file(delay=0.3), "127.0.0.1") as a,
                PagesSite(_with_file(delay=0.3), "127.0.0.2") as b,
                RobotGate(AGENT, delay=0, max_per_host=50, tdmrep=True) as gate):

        async def one(url: str) -> Any:
            async with gate.fetch(url) as resp:
                page = gate.directives(resp)
            return await gate.tdm(url, page)

        paths = ["/images/2", "/text/3", "/text/4", "/other", "/images/inventory/1"]
        urls = [site.url(paths[i % 5]) for i in range(25) for site in (a, b)]
        verdicts = await asyncio.gather(*(one(url) for url in urls))
        requests = gate.stats["tdmrep_requests"]
    assert a.hits[TDMREP] == 1 and b.hits[TDMREP] == 1 and requests == 2
    assert [v.reserved for v in verdicts[:10]] == [True, True, False, False, True, True,
                                                    None, None, False, False]


async def test_without_tdmrep_the_file_is_never_asked() -> None:
    async with PagesSite(_with_file()) as a, RobotGate(AGENT, delay=0) as gate:
        async with gate.fetch(a.url("/images/2")) as resp:
            page = gate.directives(resp)
        verdict = await gate.tdm(a.url("/images/2"), page)
        decided = await gate.decide(a.url("/images/2"))
    assert a.hits[TDMREP] == 0 and decided.tdm is None
    assert verdict.reserved is None and verdict.source == "the page states no tdm-reservation"


async def test_fetch_lines_say_whether_tdm_rights_are_reserved(
        capsys: pytest.CaptureFixture[str]) -> None:
    async with PagesSite(_with_file()) as a:
        urls = [a.url(p) for p in ("/images/2", "/text/3")]
        code = await asyncio.to_thread(main, ["fetch", "-a", AGENT, "--store", "memory", "-q",
                                              "--delay", "0", "--tdmrep", *urls])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0
    by_url = {line["url"]: line for line in lines}
    assert by_url[urls[0]]["tdm"] == {
        "reserved": True, "policy": IMAGES_POLICY,
        "source": f"{a.origin}{TDMREP}: the rule for location '/images/*'"}
    assert by_url[urls[1]]["tdm"]["reserved"] is False
    assert by_url[urls[1]]["directives"]["tdm_reservation"] is False
    assert a.hits[TDMREP] == 1


@pytest.mark.slow
async def test_the_file_is_kept_fresh_revalidated_and_stands_in_when_it_fails() -> None:
    from aiohttp import web

    from robotgate import FetchPolicy

    asked: list[tuple[str | None, int]] = []
    answer = {"status": 200}

    async def handle(request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(text="User-agent: *\nAllow: /\n")
        if request.path != TDMREP:
            return web.Response(text="<p>x</p>", content_type="text/html")
        status = answer["status"]
        if status == 200 and request.headers.get("If-None-Match") == '"v1"':
            status = 304
        asked.append((request.headers.get("If-None-Match"), status))
        if status == 200:
            return web.Response(text=FILE, content_type="application/json",
                                headers={"ETag": '"v1"'})
        return web.Response(status=status)

    runner = web.ServerRunner(web.Server(handle))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/images/2"
    policy = FetchPolicy(freshness=0.3, min_freshness=0.1)
    try:
        async with RobotGate(AGENT, delay=0, policy=policy, tdmrep=True) as gate:
            first = await gate.tdm(url)
            again = await gate.tdm(url)  # fresh: not asked again
            await asyncio.sleep(0.35)
            revalidated = await gate.tdm(url)
            answer["status"] = 503
            await asyncio.sleep(0.35)
            stood_in = await gate.tdm(url)
            meanwhile = await gate.tdm(url)  # retried only after the back-off
    finally:
        await runner.cleanup()
    assert asked == [(None, 200), ('"v1"', 304), ('"v1"', 503)]
    for verdict in (first, again, revalidated, stood_in, meanwhile):
        assert (verdict.reserved, verdict.policy) == (True, IMAGES_POLICY)
    assert "tdmrep.json answered 503; using the copy fetched at" in stood_in.source
    assert "answered" not in revalidated.source


async def test_closing_the_gate_ends_a_tdmrep_fetch_in_flight() -> None:
    from robotgate import GateClosed

    answers = _with_file()
    answers[TDMREP] = Answer(FILE, content_type="application/json", delay=5)
    async with PagesSite(answers) as a:
        gate = RobotGate(AGENT, delay=0, tdmrep=True)
        await gate.open()
        waiting = [asyncio.ensure_future(gate.tdm(a.url(p))) for p in ("/images/2", "/other")]
        while not a.hits[TDMREP]:
            await asyncio.sleep(0.01)
        await asyncio.wait_for(gate.close(), 2)
        for task in waiting:
            with pytest.raises(GateClosed):
                await asyncio.wait_for(task, 2)
        with pytest.raises(GateClosed):
            await gate.tdm(a.url("/text/4"))


async def test_the_reports_tdmrep_json_example_through_the_gate() -> None:
    example = json.dumps([
        {"location": "/directory-a/", "tdm-reservation": 1},
        {"location": "/directory-b/html/", "tdm-reservation": 1, "tdm-policy": POLICY},
        {"location": "/directory-b/images/*.jpg", "tdm-reservation": 0},
    ])
    paths = ["/directory-a/page.html", "/directory-b/html/page.html",
             "/directory-b/images/photo.jpg", "/directory-b/other.html", "/directory-c/"]
    answers = {"/robots.txt": ROBOTS, TDMREP: Answer(example, content_type="application/json")}
    answers.update({path: Answer("<p>x</p>") for path in paths})
    records: list[CrawlResult] = []
    async with PagesSite(answers) as a, RobotGate(AGENT, delay=0, tdmrep=True) as gate:
        await gate.crawl([a.url(p) for p in paths], _read, on_result=records.append,
                         concurrency=5, per_host=5)
    said = {r.url.removeprefix(a.origin): (r.tdm.reserved, r.tdm.policy)
            for r in records if r.tdm is not None}
    assert said == {
        "/directory-a/page.html": (True, None),
        "/directory-b/html/page.html": (True, POLICY),
        "/directory-b/images/photo.jpg": (False, None),
        "/directory-b/other.html": (None, None),
        "/directory-c/": (None, None),
    }
    assert a.hits[TDMREP] == 1


async def _read(url: str, resp: Any) -> None:
    await resp.read()


async def test_the_file_is_kept_in_an_sqlite_store_across_a_restart(tmp_path: Any) -> None:
    from robotgate import SQLiteStore

    path = str(tmp_path / "crawl.sqlite3")
    async with PagesSite(_with_file()) as a:
        async with RobotGate(AGENT, delay=0, tdmrep=True, store=SQLiteStore(path)) as gate:
            first = (await gate.decide(a.url("/images/2"))).tdm
            assert first is not None
        async with RobotGate(AGENT, delay=0, tdmrep=True, store=SQLiteStore(path)) as gate:
            again = await gate.tdm(a.url("/images/2"))
            store = gate.store
            robots = await store.load_robots(a.origin)
            kept = await store.load_robots(a.origin + TDMREP)
    assert a.hits[TDMREP] == 1  # the restarted gate used the stored copy
    assert (first.reserved, first.policy) == (again.reserved, again.policy) == (
        True, IMAGES_POLICY)
    # Each file under its own key: robots.txt's entry is robots.txt's.
    assert robots is not None and robots.body == str(ROBOTS.body).encode()
    assert kept is not None and kept.body == FILE.encode()


async def test_workers_sharing_a_redis_store_ask_once(redis_url: str, prefix: str) -> None:
    pytest.importorskip("redis")
    from robotgate import RedisStore

    async with PagesSite(_with_file()) as a:
        gates = [RobotGate(AGENT, delay=0, tdmrep=True, store=RedisStore(redis_url, prefix=prefix))
                 for _ in range(2)]
        try:
            for gate in gates:
                await gate.open()
            verdicts = [await gate.tdm(a.url("/text/4")) for gate in gates]
        finally:
            for gate in gates:
                await gate.close()
    assert a.hits[TDMREP] == 1
    assert [(v.reserved, v.policy) for v in verdicts] == [(True, POLICY)] * 2


async def test_a_redirected_page_takes_the_verdict_of_where_it_came_from() -> None:
    records: list[CrawlResult] = []
    async with (PagesSite(_without_file(), "127.0.0.1") as a,
                PagesSite(_with_file(), "127.0.0.2") as b,
                RobotGate(AGENT, delay=0, tdmrep=True) as gate):
        a.answers["/go"] = Answer(status=302, headers={"Location": b.url("/images/2")})
        await gate.crawl([a.url("/go")], _read, on_result=records.append)
    (record,) = records
    assert record.final_url == b.url("/images/2") and record.tdm is not None
    assert (record.tdm.reserved, record.tdm.policy) == (True, IMAGES_POLICY)
    assert (a.hits[TDMREP], b.hits[TDMREP]) == (0, 1)
