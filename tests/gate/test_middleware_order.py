"""A request the gate cannot serve without waiting on itself: the same task makes a
second request to a server whose slot it holds (a middleware after ``gate.middleware``
that makes its own request through the session, a token refresh or a log call; a
``gate.fetch`` inside a streamed one).  It is refused at once, naming the cause
(:class:`~robotgate.WaitsOnItself`, an ``aiohttp.ClientError`` here), never left waiting
for good; a request to another server goes.  aiohttp's own
``test_middleware_uses_session_avoids_recursion_with_path_check`` is the shape."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field
from typing import Literal, TypeVar

import aiohttp
import pytest
from aiohttp import web

from robotgate import RobotGate, WaitsOnItself
from robotgate.gate.aiohttp_peers import Handler

AGENT = "OrderBot/1.0"
HOST, OTHER_HOST = "127.0.0.1", "127.0.0.2"
#: A bound on every request here: a hang fails the test, never stalls it.
HANG = 10.0
T = TypeVar("T")


async def within(aw: Awaitable[T]) -> T:
    """``await aw`` in this task (asyncio.wait_for would run it in another, which
    waits for the slot as any other task does), cancelled after :data:`HANG`."""
    task = asyncio.current_task()
    assert task is not None
    timer = asyncio.get_running_loop().call_later(HANG, task.cancel)
    try:
        return await aw
    finally:
        timer.cancel()


@dataclass
class Servers:
    """Three loopback servers: the main site, a log API on the same host (another
    port: another origin, the same server to the gate) and one on another host."""

    main: str = ""
    same_host: str = ""
    other_host: str = ""
    logged: list[str] = field(default_factory=list)


@pytest.fixture
async def servers() -> AsyncIterator[Servers]:
    found = Servers()

    async def handle(request: web.Request) -> web.Response:
        if request.path == "/log":
            found.logged.append(await request.text())
        return web.Response(text=f"Hello from {request.path}")

    runners = []
    for name, host in (("main", HOST), ("same_host", HOST), ("other_host", OTHER_HOST)):
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, host, 0).start()
        setattr(found, name, f"http://{host}:{runner.addresses[0][1]}")
        runners.append(runner)
    try:
        yield found
    finally:
        for runner in runners:
            await runner.cleanup()


def open_gate() -> RobotGate:
    return RobotGate(AGENT, delay=0, is_private=lambda address: False)


Where = Literal["main", "same_host", "other_host"]


@pytest.mark.parametrize("where", ["main", "same_host", "other_host"])
@pytest.mark.parametrize("gate_first", [True, False])
async def test_a_middleware_making_its_own_request_never_hangs(
        servers: Servers, gate_first: bool, where: Where) -> None:
    log_to = f"{getattr(servers, where)}/log"

    async def log_middleware(req: aiohttp.ClientRequest,
                             handler: Handler) -> aiohttp.ClientResponse:
        if req.url.path != "/log":  # aiohttp's path check: its own call is not logged
            async with req.session.post(log_to, data=str(req.url)) as resp:
                assert resp.status == 200
        return await handler(req)

    async with open_gate() as gate:
        chain = (gate.middleware, log_middleware) if gate_first \
            else (log_middleware, gate.middleware)
        async with aiohttp.ClientSession(middlewares=chain) as session:
            request = session.get(f"{servers.main}/test")
            if gate_first and where != "other_host":
                # The log call waits for the server's slot its own request holds.
                with pytest.raises(WaitsOnItself) as refused:
                    await within(request)
                assert isinstance(refused.value, aiohttp.ClientError)
                assert f"{log_to}" in str(refused.value)
                assert "gate.middleware" in str(refused.value)
                assert servers.logged == []
            else:
                async with await within(request) as resp:
                    assert await resp.text() == "Hello from /test"
                assert servers.logged == [f"{servers.main}/test"]


@pytest.mark.slow
async def test_a_fetch_inside_a_streamed_fetch_to_the_same_server_is_refused_at_once(
        servers: Servers) -> None:
    async with open_gate() as gate:
        async with gate.fetch(f"{servers.main}/first", stream=True) as first:
            with pytest.raises(WaitsOnItself) as refused:
                await within(gate.fetch(f"{servers.same_host}/second"))
            assert isinstance(refused.value, aiohttp.ClientError)
            other = await within(gate.fetch(f"{servers.other_host}/third"))
            assert other.status == 200 and first.status == 200
            # Another task's request to the server waits for the turn, as it always did.
            waiting = asyncio.ensure_future(gate.fetch(f"{servers.main}/fourth"))
            for _ in range(20):
                await asyncio.sleep(0)
            assert not waiting.done()
        assert (await within(waiting)).status == 200
        # Let go: the same request goes now.
        again = await within(gate.fetch(f"{servers.same_host}/second"))
        assert again.status == 200
