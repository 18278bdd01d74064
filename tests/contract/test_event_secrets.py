"""Events carry URLs without their secrets, through every in-process client path:
a password, or a user name standing alone (often a token), is redacted as the event
is made (docs/operators.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from robotgate.events import Event, ResponseAnswered, TurnWaited, UrlSkipped
from tests.contract.test_request_paths import PUBLIC, Driver, Site

pytestmark = pytest.mark.slow  # loopback servers with real waits


@pytest.fixture
async def public() -> AsyncIterator[Site]:
    site = await Site(PUBLIC).start()
    yield site
    await site.close()


@pytest.mark.parametrize("path", ["fetch", "middleware", "httpx", "crawl"])
async def test_no_event_carries_a_password_or_a_token(path: str, public: Site) -> None:
    heard: list[Event] = []
    base = f"http://{PUBLIC}:{public.port}"
    urls = [base.replace("//", "//user:s3cretPW@") + "/page",
            base.replace("//", "//TOKEN123@") + "/page2",  # waits its turn: TurnWaited
            base.replace("//", "//user:s3cretPW@") + "/no/x"]  # disallowed: UrlSkipped
    async with Driver(path).open(delay=0.05, on_event=heard.append) as client:
        for url in urls:
            await client.get(url)
    with_url = [e for e in heard if isinstance(e, (ResponseAnswered, TurnWaited, UrlSkipped))]
    kinds = {type(e) for e in with_url}
    assert {ResponseAnswered, UrlSkipped} <= kinds, heard
    for event in with_url:
        assert "s3cretPW" not in event.url and "TOKEN123" not in event.url, event
        assert "@" not in event.url or "***@" in event.url, event
