"""Who pointed at a Scrapy request: read from the request's meta alone, a callback's
request made with ``meta=response.meta`` included (RobotGatePointersMiddleware)."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web

from robotgate.policy.provenance import INPUT, Provenance, pointer_of
from tests.integrations.test_scrapy_middleware import crawl

pytest.importorskip("scrapy", reason="Scrapy is not installed: pip install 'robotgate[scrapy]'")

from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from robotgate.integrations.scrapy import RobotGatePointersMiddleware
from robotgate.integrations.scrapy.middleware import (
    POINTED_BY,
    provenance_of_request,
)

PUBLIC, PRIVATE = "127.0.0.1", "127.0.0.2"
INTRANET = f"http://{PRIVATE}:9/start"  # a private seed
PAGE = f"http://{PUBLIC}:9/page"  # a public page the seed links to
SECRET = f"http://{PRIVATE}:9/secret"  # where the public page links
POINTERS_MIDDLEWARE = {"robotgate.integrations.scrapy.RobotGatePointersMiddleware": 50}


def public_loopback_1(address: object) -> bool:
    return str(address) != PUBLIC


def response(url: str, **meta: Any) -> HtmlResponse:
    return HtmlResponse(url, request=Request(url, meta=meta), body=b"<html></html>")


def pointers() -> RobotGatePointersMiddleware:
    return RobotGatePointersMiddleware(get_crawler(settings_dict={}))


def made_from(page: HtmlResponse, copy_meta: bool) -> dict[str, Any]:
    """The meta of a request a callback makes from ``page`` (its meta carried over, the
    Scrapy idiom, or not), as the pointers middleware hands it on."""
    request = Request(SECRET, meta=page.meta if copy_meta else None)
    processed = pointers().get_processed_request(request, page)
    assert processed is not None
    return dict(processed.meta)


@pytest.mark.parametrize("copy_meta", [False, True], ids=["own meta", "meta=response.meta"])
@pytest.mark.parametrize("reached", ["as a link", "by a redirect"])
def test_a_callbacks_request_is_its_pages_pointer(copy_meta: bool, reached: str) -> None:
    # The public page was reached from the intranet seed, as its link or its redirect;
    # a request made from it is the public page's pointer, whatever meta it carries over.
    came = ({POINTED_BY: INTRANET} if reached == "as a link"
            else {"redirect_urls": [INTRANET], "redirect_times": 1})
    meta = made_from(response(PAGE, **came), copy_meta)
    assert provenance_of_request(meta) == pointer_of(PAGE)


def test_a_redirect_of_a_request_made_with_the_pages_meta_is_its_own_hop() -> None:
    # Scrapy's RedirectMiddleware adds the URL redirected to what the request carried.
    meta = made_from(response(PAGE, redirect_urls=[INTRANET]), copy_meta=True)
    meta["redirect_urls"] = [*meta["redirect_urls"], SECRET]
    assert provenance_of_request(meta) == pointer_of(SECRET)


def test_what_a_request_says_itself_is_kept() -> None:
    said = Provenance("http://intranet.example/", public=False)
    request = Request(SECRET, meta={POINTED_BY: said})
    processed = pointers().get_processed_request(request, response(PAGE, **{POINTED_BY: ""}))
    assert processed is not None and provenance_of_request(processed.meta) == said
    assert provenance_of_request({}) == INPUT
    assert provenance_of_request({"redirect_urls": [PAGE]}) == pointer_of(PAGE)


@pytest.mark.slow
@pytest.mark.parametrize("copy_meta", [False, True], ids=["own meta", "meta=response.meta"])
@pytest.mark.parametrize("reached", ["as a link", "by a redirect"])
async def test_a_public_pages_link_into_the_intranet_is_refused_whatever_meta_it_carries(
        copy_meta: bool, reached: str) -> None:
    # An intranet crawl (its seed private) reaches a public page, as the seed's link or
    # its redirect; the public page links back into the intranet.
    private_seen: list[str] = []
    public_port = 0

    async def private(request: web.Request) -> web.Response:
        private_seen.append(request.path)
        page = f"http://{PUBLIC}:{public_port}/page"
        if request.path == "/start":
            if reached == "by a redirect":
                raise web.HTTPFound(page)
            return web.Response(text=f'<a href="{page}">x</a>', content_type="text/html")
        return web.Response(text="User-agent: *\nAllow: /\n")

    async def public(request: web.Request) -> web.Response:
        if request.path == "/page":
            return web.Response(text=f'<a href="{secret}">x</a>', content_type="text/html")
        return web.Response(text="User-agent: *\nAllow: /\n")

    runners = []
    for host, handler in ((PRIVATE, private), (PUBLIC, public)):
        app = web.Application()
        app.router.add_get("/{tail:.*}", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, host, 0).start()
        runners.append(runner)
    private_port, public_port = (runner.addresses[0][1] for runner in runners)
    secret = f"http://{PRIVATE}:{private_port}/secret"
    try:
        result = await crawl({
            "urls": [f"http://{PRIVATE}:{private_port}/start"], "follow": True,
            "copy_meta": copy_meta, "settings": {
                "ROBOTGATE_DELAY": 0, "SPIDER_MIDDLEWARES": POINTERS_MIDDLEWARE,
                "ROBOTGATE_IS_PRIVATE": "tests.integrations.test_scrapy_pointers.public_loopback_1",
            }})
    finally:
        for runner in runners:
            await runner.cleanup()
    assert [url for url, _ in result["pages"]] == [
        *([] if reached == "by a redirect" else [f"http://{PRIVATE}:{private_port}/start"]),
        f"http://{PUBLIC}:{public_port}/page"], result
    [dropped] = result["dropped"]
    assert dropped["url"] == secret and dropped["outcome"] == "redirect-refused", dropped
    assert "/secret" not in private_seen
