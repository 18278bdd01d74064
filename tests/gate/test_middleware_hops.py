"""``gate.middleware``: which request of a user's session is a redirect's hop.

aiohttp follows redirects itself and calls the middleware once per request it sends; a
hop is a request of the same aiohttp call that got the redirect, nothing else.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Literal

import aiohttp
import pytest
from aiohttp import web

from robotgate import Disallowed, RobotGate
from robotgate.gate.aiohttp_middleware import _NESTED
from robotgate.gate.aiohttp_peers import Handler

AGENT = "HopBot/1.0"
PUBLIC, PRIVATE = "127.0.0.1", "127.0.0.2"


def public_loopback_1(address: object) -> bool:
    """127.0.0.1 plays a public site, every other address a private one."""
    return str(address) != PUBLIC


class Site:
    """A loopback site on ``host``: ``/to?url=...`` redirects there, every other path
    answers 200; each request's path and headers are recorded."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.seen: list[tuple[str, str | None]] = []  # (path, Authorization)
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append((request.path, request.headers.get("Authorization")))
        if request.path == "/to":
            raise web.HTTPFound(request.query["url"])
        return web.Response(text="page")

    def pages(self) -> list[str]:
        return [path for path, _ in self.seen if path != "/robots.txt"]


async def serve(site: Site) -> web.AppRunner:
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", site.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, site.host, 0).start()
    site.url = f"http://{site.host}:{runner.addresses[0][1]}"
    return runner


@pytest.fixture
async def sites() -> AsyncIterator[tuple[Site, Site]]:
    public, private = Site(PUBLIC), Site(PRIVATE)
    runners = [await serve(public), await serve(private)]
    try:
        yield public, private
    finally:
        for runner in runners:
            await runner.cleanup()


async def test_a_followed_redirect_into_a_private_address_is_refused(
        sites: tuple[Site, Site]) -> None:
    public, private = sites
    async with RobotGate(AGENT, delay=0, is_private=public_loopback_1) as gate, \
            aiohttp.ClientSession(middlewares=[gate.middleware]) as session:
        with pytest.raises(Disallowed) as refused:
            await session.get(f"{public.url}/to?url={private.url}/secret")
    assert refused.value.decision.outcome == "redirect-refused"
    assert private.seen == []


@pytest.mark.parametrize("ended", ["not followed", "refused", "too many redirects"])
async def test_your_own_request_to_where_a_redirect_led_is_your_input(
        sites: tuple[Site, Site],
        ended: Literal["not followed", "refused", "too many redirects"]) -> None:
    # The same task, the very URL the redirect named, next: still a request of your own
    # (never refused for its address), its Authorization header sent.
    public, private = sites
    secret = f"{private.url}/secret"
    async with RobotGate(AGENT, delay=0, is_private=public_loopback_1) as gate, \
            aiohttp.ClientSession(middlewares=[gate.middleware]) as session:
        redirect = f"{public.url}/to?url={secret}"
        if ended == "not followed":
            async with session.get(redirect, allow_redirects=False) as moved:
                assert moved.status == 302
        elif ended == "refused":
            with pytest.raises(Disallowed):
                await session.get(redirect)
        else:
            with pytest.raises(aiohttp.TooManyRedirects):
                await session.get(redirect, max_redirects=1)
        async with session.get(secret, headers={"Authorization": "Bearer mine"}) as own:
            assert own.status == 200
    assert private.pages() == ["/secret"]
    assert private.seen[-1] == ("/secret", "Bearer mine")


async def test_a_hop_keeps_the_calls_credentials_as_aiohttp_does_but_not_a_locations(
        sites: tuple[Site, Site]) -> None:
    # aiohttp sends a call's Authorization on a redirect to the same origin (and drops
    # it to another); credentials a Location carries are never sent.
    public, _ = sites
    login = public.url.replace("http://", "http://user:secret@")
    async with RobotGate(AGENT, delay=0, is_private=public_loopback_1) as gate, \
            aiohttp.ClientSession(middlewares=[gate.middleware]) as session:
        mine = {"Authorization": "Bearer mine"}
        async with session.get(f"{public.url}/to?url=/same", headers=mine) as same:
            assert same.status == 200 and [r.status for r in same.history] == [302]
        async with session.get(f"{public.url}/to?url={login}/located") as located:
            assert located.status == 200
    sent = dict(public.seen)
    assert sent["/same"] == "Bearer mine"
    assert sent["/located"] is None


async def test_the_hops_of_concurrent_calls_are_told_apart(sites: tuple[Site, Site]) -> None:
    # Calls in tasks of their own: each hop is its own call's, whatever runs between.
    public, private = sites
    async with RobotGate(AGENT, delay=0, is_private=public_loopback_1) as gate, \
            aiohttp.ClientSession(middlewares=[gate.middleware]) as session:

        async def own(path: str) -> int:
            async with session.get(f"{private.url}{path}") as resp:
                return resp.status

        async def pointed(path: str) -> int:
            async with session.get(f"{public.url}/to?url={private.url}{path}") as resp:
                return resp.status

        results = await asyncio.gather(*(call(f"/p{i}") for i in range(6)
                                         for call in (own, pointed)),
                                       return_exceptions=True)
    owns, pointers = results[::2], results[1::2]
    assert owns == [200] * 6
    assert all(isinstance(result, Disallowed) for result in pointers), pointers
    assert sorted(private.pages()) == [f"/p{i}" for i in range(6)]


async def test_a_request_another_middleware_makes_before_a_hop_leaves_the_hop_a_pointer(
        sites: tuple[Site, Site]) -> None:
    # A middleware before the gate's that makes a request of its own on the session (a
    # token refresh...) as a hop goes by: that request is another call, the hop still
    # the redirect's.
    public, private = sites
    async with RobotGate(AGENT, delay=0, is_private=public_loopback_1) as gate:
        session: aiohttp.ClientSession

        async def refreshing(req: aiohttp.ClientRequest,
                             handler: Handler) -> aiohttp.ClientResponse:
            if req.url.host == PRIVATE:
                async with session.get(f"{public.url}/token") as token:
                    assert token.status == 200
            return await handler(req)

        async with aiohttp.ClientSession(middlewares=[refreshing, gate.middleware]) as session:
            with pytest.raises(Disallowed) as refused:
                await session.get(f"{public.url}/to?url={private.url}/secret")
    assert refused.value.decision.outcome == "redirect-refused"
    assert public.pages() == ["/to", "/token"]
    assert private.seen == []


async def test_redirects_no_call_follows_are_kept_for_a_few_calls_a_task(
        sites: tuple[Site, Site]) -> None:
    # Each unfollowed redirect is kept until a later call of the task answers; a task
    # making many keeps the last few, and none once it is done.
    public, _ = sites
    async with RobotGate(AGENT, delay=0, is_private=public_loopback_1) as gate, \
            aiohttp.ClientSession(middlewares=[gate.middleware]) as session:

        async def moved(count: int) -> None:
            for i in range(count):
                async with session.get(f"{public.url}/to?url=/p{i}",
                                       allow_redirects=False) as resp:
                    assert resp.status == 302

        followed = gate._client._followed._by_task
        await moved(50)
        assert len(followed[asyncio.current_task()]) == _NESTED  # type: ignore[index]
        await asyncio.create_task(moved(3))
        await asyncio.sleep(0)  # the task's done callbacks run
        assert len(followed) == 1
