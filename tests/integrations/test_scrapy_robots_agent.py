"""Scrapy and the robot's name (issue 52 item 5): ``ROBOTSTXT_USER_AGENT`` is the name
robots.txt groups are matched against, and ``robots_parsed`` is sent as Scrapy's own
RobotsTxtMiddleware sends it."""

from __future__ import annotations

import pytest
from aiohttp import web

from robotgate.integrations.scrapy import RobotgateRobotParser
from robotgate.integrations.scrapy.settings import read_settings
from tests.integrations.test_scrapy_middleware import crawl

pytest.importorskip("scrapy", reason="Scrapy is not installed: pip install 'robotgate[scrapy]'")

BROWSER = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/120.0.0.0 Safari/537.36")
ROBOTS = "User-agent: Examplebot\nDisallow: /private\n\nUser-agent: *\nAllow: /\n"


@pytest.mark.slow
async def test_robotstxt_user_agent_picks_the_group_and_robots_parsed_is_sent() -> None:
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.path)
        return web.Response(text=ROBOTS if request.path == "/robots.txt" else "page")

    runner = web.ServerRunner(web.Server(handle))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        result = await crawl({
            "urls": [base + "/private", base + "/page"],
            "settings": {"ROBOTGATE_DELAY": 0, "USER_AGENT": BROWSER,
                         "ROBOTSTXT_USER_AGENT": "Examplebot"},
            "probe": [[base + "/private", "Examplebot"], [base + "/private", BROWSER]],
        })
    finally:
        await runner.cleanup()
    # The site forbids /private to Examplebot: it never reached the server.
    assert "/private" not in seen and "/page" in seen
    assert [d["url"] for d in result["dropped"]] == [base + "/private"]
    # One announcement for the one robots.txt, with a parser Scrapy's way and the
    # request that asked for the site.
    (parsed,) = result["robots_parsed"]
    assert parsed["parser"] == "RobotgateRobotParser"
    assert parsed["request"] in (base + "/private", base + "/page")
    assert parsed["allowed"] == [False, True]


def test_robotstxt_user_agent_is_the_gates_robots_agent() -> None:
    conf = read_settings({"USER_AGENT": BROWSER, "ROBOTSTXT_USER_AGENT": "Examplebot"})
    assert conf.user_agent == BROWSER and conf.options["robots_agent"] == "Examplebot"
    assert "robots_agent" not in read_settings({"USER_AGENT": "MyBot/1.0"}).options


def test_the_parser_matches_the_robot_a_browser_style_user_agent_names() -> None:
    rp = RobotgateRobotParser(b"User-agent: MyBot\nDisallow: /private\n\nUser-agent: *\n"
                              b"Allow: /\n")
    agent = b"Mozilla/5.0 (compatible; MyBot/1.0; +https://example.com/bot)"
    assert not rp.allowed("https://example.com/private", agent)
    assert rp.allowed("https://example.com/private", BROWSER)
