"""``robotgate fetch --sitemaps ORIGIN``: the entries of an origin's sitemaps, crawled."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator, Sequence

import pytest

from robotgate.cli import main
from tests.gate.test_sitemaps import Site, index, urlset

AGENT = "MapBot/1.0 (+https://example.com/bot)"


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    s = await Site().start()
    yield s
    await s.close()


async def run(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    # The CLI runs its own event loop: a thread of its own, the server on the test's loop.
    code = await asyncio.to_thread(main, ["fetch", "--agent", AGENT, "--store", "memory",
                                          "--delay", "0", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def lines(out: str) -> dict[str, dict[str, object]]:
    records = [json.loads(line) for line in out.splitlines() if line.strip()]
    return {str(r["url"]): r for r in records}


async def test_fetch_crawls_the_entries_of_an_origins_sitemaps(
        site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    site.routes.update({
        "/robots.txt": (f"User-agent: *\nDisallow: /private/\n"
                        f"Sitemap: {site.url('/index.xml')}\n"
                        f"Sitemap: {site.url('/private/hidden.xml')}\n").encode(),
        "/index.xml": index(site.url("/a.xml.gz"), site.url("/list.txt")),
        "/a.xml.gz": gzip.compress(urlset(site.url("/a/1"), site.url("/private/p"))),
        "/list.txt": f"{site.url('/t/1')}\n{site.url('/t/2')}\n".encode(),
        "/private/hidden.xml": urlset(site.url("/secret")),
        "/a/1": b"page", "/t/1": b"page", "/t/2": b"page", "/given": b"page",
    })
    code, out, err = await run(["--sitemaps", site.url("/"), site.url("/given")], capsys)
    assert code == 0, err
    records = lines(out)
    assert set(records) == {site.url(p) for p in ("/given", "/a/1", "/private/p", "/t/1",
                                                  "/t/2")}
    assert records[site.url("/a/1")]["status"] == 200
    assert records[site.url("/private/p")]["skipped"] == "disallowed"
    assert (f"robotgate: sitemap {site.url('/private/hidden.xml')}: not fetched: disallowed by "
            "'Disallow: /private/'") in err
    for path in ("/robots.txt", "/index.xml", "/a.xml.gz", "/list.txt", "/a/1", "/t/1"):
        assert site.count(path) == 1, path
    assert not any(p.startswith("/private/") for p, _ in site.requests)


async def test_fetch_with_only_sitemaps_shows_their_problems_printably(
        site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    site.routes["/robots.txt"] = b"User-agent: *\nAllow: /\n"
    site.routes["/sitemap.xml"] = (f"{site.url('/x')}\n"
                                   "http://other.example/\x1b[2J\x1b[31mred\n").encode()
    site.routes["/x"] = b"page"
    code, out, err = await run(["--sitemaps", site.url("/anything")], capsys)
    assert code == 0, err
    assert set(lines(out)) == {site.url("/x")}
    assert "1 URL outside the sitemap's scope" in err
    # The escape shown as "?", which then reads as a query: its value said as a digest.
    assert "\x1b" not in err and "e.g. http://other.example/?~" in err


async def test_a_sitemap_that_cannot_be_read_is_said_and_the_run_ends_well(
        site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    site.routes["/robots.txt"] = b"User-agent: *\nAllow: /\n"  # and no /sitemap.xml: 404
    code, out, err = await run(["--sitemaps", site.url("/")], capsys)
    assert code == 0 and out == ""
    assert f"robotgate: sitemap {site.url('/sitemap.xml')}: answered 404: not read" in err


def test_a_bad_origin_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fetch", "--agent", AGENT, "--store", "memory",
                 "--sitemaps", "ftp://user:secret@example.com/"])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.startswith("robotgate: error: bad --sitemaps: ") and err.count("\n") == 1
    assert "secret" not in err
