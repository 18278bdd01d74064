"""The robot's name through the gate, on loopback (issue 52 item 5): a browser-style
User-Agent gets its robot's group, and ``robots_agent`` / ``--robots-agent`` name it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiohttp import web

from robotgate import Disallowed, RobotGate
from tests.cli.test_cli import json_lines, run_async

ROBOTS = ("User-agent: MyBot\nDisallow: /private\n\n"
          "User-agent: mozilla\nDisallow: /other\n\n"
          "User-agent: *\nAllow: /\n")
BROWSER_STYLE = "Mozilla/5.0 (compatible; MyBot/1.0; +https://example.com/bot)"


@asynccontextmanager
async def site(seen: list[tuple[str, str]]) -> AsyncIterator[str]:
    async def handle(request: web.BaseRequest) -> web.Response:
        seen.append((request.path, request.headers.get("User-Agent", "")))
        if request.path == "/robots.txt":
            return web.Response(text=ROBOTS)
        # Page directives name robots too: the gate reads them for the same name.
        return web.Response(text="page", headers={"X-Robots-Tag": "mybot: nofollow"})

    runner = web.ServerRunner(web.Server(handle))
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def test_a_browser_style_user_agent_gets_its_robots_group() -> None:
    seen: list[tuple[str, str]] = []
    async with site(seen) as base, RobotGate(BROWSER_STYLE, delay=0) as gate:
        with pytest.raises(Disallowed) as refused:
            async with gate.fetch(base + "/private"):
                pass
        assert refused.value.decision.group == ("mybot",)
        async with gate.fetch(base + "/other") as resp:  # the 'mozilla' group is not ours
            assert resp.status == 200
            assert gate.directives(resp).nofollow
        assert not await gate.allowed(base + "/private")
        assert not (await gate.decide(base + "/private")).allowed
    assert [path for path, _ in seen] == ["/robots.txt", "/other"]
    assert {agent for _, agent in seen} == {BROWSER_STYLE}  # sent as given


async def test_robots_agent_names_the_robot_whatever_the_user_agent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    seen: list[tuple[str, str]] = []
    browser = "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0"
    async with site(seen) as base:
        code, out, _ = await run_async(
            ["fetch", "-a", browser, "--robots-agent", "MyBot", "--store", "memory",
             "--delay", "0", "-q", base + "/private", base + "/page"], capsys)
        bad, _, err = await run_async(
            ["fetch", "-a", browser, "--robots-agent", "*", base + "/page"], capsys)
    assert code == 0
    records = {str(r["url"]): r for r in json_lines(out)}
    assert records[base + "/private"]["skipped"] == "disallowed"
    assert records[base + "/page"]["status"] == 200
    assert "/private" not in [path for path, _ in seen]
    assert bad == 2 and "--robots-agent '*' has no product token" in err
