"""A refusal is also the client's own error: ``except httpx.RequestError`` around the httpx
transport and ``except aiohttp.ClientError`` around ``gate.fetch`` and the middleware
catch it, as they catch every other failed request, while ``except robotgate.Disallowed``
(and ``robotgate.Error``) still does and the decision comes with it.

Three refusals per path: robots.txt's rule, a redirect into a disallowed path, and a
redirect from a public site into a private address (127.0.0.2 here).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

import robotgate
from robotgate import Disallowed, RobotGate
from robotgate.gate.aiohttp_client import AiohttpDisallowed
from tests.contract.test_request_paths import AGENT, PRIVATE, PUBLIC, Site, public_loopback_1

httpx = pytest.importorskip("httpx")

from robotgate.integrations.httpx import HttpxDisallowed, RobotGateTransport  # noqa: E402


@pytest.fixture
async def public() -> AsyncIterator[Site]:
    site = await Site(PUBLIC).start()
    yield site
    await site.close()


def _refused_urls(site: Site) -> dict[str, tuple[str, str]]:
    """Each kind of refusal: the URL asked, and the outcome and URL its refusal names."""
    private = f"http://{PRIVATE}:{site.port}/inside"
    return {
        "rule": (site.url("/no/x"), "rule"),
        "redirect-to-disallowed": (site.url("/redirect?to=/no/y"), "rule"),
        "redirect-to-private": (site.url(f"/redirect?to={private}"), "redirect-refused"),
    }


KINDS = ["rule", "redirect-to-disallowed", "redirect-to-private"]


def _check_refusal(exc: BaseException, outcome: str) -> None:
    assert isinstance(exc, Disallowed) and isinstance(exc, robotgate.Error)
    assert (exc.decision.outcome or "rule") == outcome
    assert not exc.decision.allowed and exc.decision.reason


@pytest.mark.parametrize("kind", KINDS)
async def test_gate_fetch_refusal_is_an_aiohttp_client_error(public: Site, kind: str) -> None:
    url, outcome = _refused_urls(public)[kind]
    async with RobotGate(AGENT, delay=0, is_private=public_loopback_1) as gate:
        try:
            await gate.fetch(url)
        except aiohttp.ClientError as exc:  # as a plain aiohttp caller writes it
            _check_refusal(exc, outcome)
            assert type(exc) is AiohttpDisallowed
        else:
            raise AssertionError("not refused")
        with pytest.raises(Disallowed):  # and the clause written for robotgate
            async with gate.fetch(url):
                pass
    assert "/no/x" not in public.paths() and "/no/y" not in public.paths()


@pytest.mark.parametrize("kind", KINDS)
async def test_middleware_refusal_is_an_aiohttp_client_error(public: Site, kind: str) -> None:
    url, outcome = _refused_urls(public)[kind]
    async with (RobotGate(AGENT, delay=0, is_private=public_loopback_1) as gate,
                aiohttp.ClientSession(middlewares=(gate.middleware,)) as session):
        try:
            async with session.get(url) as resp:
                await resp.read()
        except aiohttp.ClientError as exc:
            _check_refusal(exc, outcome)
            assert type(exc) is AiohttpDisallowed
        else:
            raise AssertionError("not refused")
    assert "/no/x" not in public.paths() and "/no/y" not in public.paths()


@pytest.mark.parametrize("kind", KINDS)
async def test_httpx_refusal_is_an_httpx_request_error(public: Site, kind: str) -> None:
    url, outcome = _refused_urls(public)[kind]
    async with (RobotGate(AGENT, delay=0, is_private=public_loopback_1) as gate,
                httpx.AsyncClient(transport=RobotGateTransport(gate),
                                  follow_redirects=True) as client):
        try:
            await client.get(url)
        except httpx.RequestError as exc:  # as a plain httpx caller writes it
            _check_refusal(exc, outcome)
            assert type(exc) is HttpxDisallowed
            assert isinstance(exc, httpx.HTTPError) and not isinstance(exc, httpx.TransportError)
            # The request refused: the hop's own, for a redirect.
            assert str(exc.request.url) == exc.url
        else:
            raise AssertionError("not refused")
        with pytest.raises(Disallowed):
            await client.get(url)
    assert "/no/x" not in public.paths() and "/no/y" not in public.paths()


def test_the_client_refusals_keep_the_url_without_its_password() -> None:
    from robotgate.decision import Decision

    decision = Decision(False, "Disallow: /no/")
    for refusal in (AiohttpDisallowed("http://u:secret@a.example/no/", decision),
                    HttpxDisallowed("http://u:secret@a.example/no/", decision)):
        # Its message is said (redacted); its url is returned to the caller as asked for.
        assert "secret" not in str(refusal) and "secret" not in repr(refusal)
        assert refusal.url == "http://u:secret@a.example/no/"
        assert refusal.decision is decision
