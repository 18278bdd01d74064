"""A pytest plugin for a client's own test suite (run by ``run.py``, not collected here).

``ROBOTGATE_SUITE_WRAP`` says what it does to the clients the suite makes:

- ``record``: nothing; it notes which tests made one (the plain run);
- ``aiohttp-first`` / ``aiohttp-last``: every ``aiohttp.ClientSession`` gets a gate's
  ``gate.middleware`` first / last in its middlewares;
- ``httpx``: every ``httpx.AsyncClient``'s transports (its own and its mounts') are
  wrapped in a ``RobotGateTransport``;
- ``crawlee``: crawlee's ``ImpitHttpClient``, ``HttpxHttpClient`` and
  ``CurlImpersonateHttpClient`` are each made as the ``inner`` of a
  ``RobotGateHttpClient`` (run by ``run_crawlee.py``).

Each client gets a gate of its own, as a user's would be: no pacing (``delay=0``),
redirects into loopback allowed (the suites' servers are all on loopback), the client's
own User-Agent (the gate sends its agent on every request), closed with the client.
``ROBOTGATE_SUITE_OUT``: the JSON file it writes each test's outcome and whether the
test made a client to.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import weakref
from typing import Any

import pytest

from robotgate import Network, RobotGate

MODE = os.environ.get("ROBOTGATE_SUITE_WRAP", "record")
_outcomes: dict[str, str] = {}
_made: set[str] = set()
_current: list[str] = []
_gates: weakref.WeakKeyDictionary[Any, list[RobotGate]] = weakref.WeakKeyDictionary()


def _gate(agent: str) -> RobotGate:
    return RobotGate(agent, delay=0, network=Network(allow_private_redirects=True))


async def _close(client: Any) -> None:
    for gate in _gates.pop(client, []):
        await gate.close()


def _made_one() -> None:
    if _current:
        _made.add(_current[-1])


def _patch_aiohttp() -> None:
    import aiohttp
    from aiohttp.http import SERVER_SOFTWARE

    init, close = aiohttp.ClientSession.__init__, aiohttp.ClientSession.close

    def wrapped_init(self: aiohttp.ClientSession, *args: Any, **kwargs: Any) -> None:
        _made_one()
        if MODE.startswith("aiohttp-"):
            gate = _gate(SERVER_SOFTWARE)
            theirs = tuple(kwargs.get("middlewares") or ())
            kwargs["middlewares"] = ((gate.middleware, *theirs) if MODE == "aiohttp-first"
                                     else (*theirs, gate.middleware))
            init(self, *args, **kwargs)
            _gates[self] = [gate]
        else:
            init(self, *args, **kwargs)

    async def wrapped_close(self: aiohttp.ClientSession) -> None:
        try:
            await close(self)
        finally:
            await _close(self)

    aiohttp.ClientSession.__init__ = wrapped_init  # type: ignore[method-assign]
    aiohttp.ClientSession.close = wrapped_close  # type: ignore[method-assign]


def _patch_httpx() -> None:
    import httpx

    init = httpx.AsyncClient.__init__
    aexit, aclose = httpx.AsyncClient.__aexit__, httpx.AsyncClient.aclose

    def wrapped_init(self: httpx.AsyncClient, *args: Any, **kwargs: Any) -> None:
        _made_one()
        init(self, *args, **kwargs)
        if MODE != "httpx":
            return
        from robotgate.integrations.httpx import RobotGateTransport

        gates = _gates[self] = []

        def wrap(inner: httpx.AsyncBaseTransport) -> httpx.AsyncBaseTransport:
            gate = _gate(f"python-httpx/{httpx.__version__}")
            gates.append(gate)
            return RobotGateTransport(gate, inner)

        self._transport = wrap(self._transport)
        self._mounts = {pattern: None if transport is None else wrap(transport)
                        for pattern, transport in self._mounts.items()}

    async def wrapped_aexit(self: httpx.AsyncClient, *exc: Any) -> None:
        try:
            await aexit(self, *exc)
        finally:
            await _close(self)

    async def wrapped_aclose(self: httpx.AsyncClient) -> None:
        try:
            await aclose(self)
        finally:
            await _close(self)

    httpx.AsyncClient.__init__ = wrapped_init  # type: ignore[method-assign]
    httpx.AsyncClient.__aexit__ = wrapped_aexit  # type: ignore[method-assign]
    httpx.AsyncClient.aclose = wrapped_aclose  # type: ignore[method-assign]


def _patch_crawlee() -> None:
    # crawlee's suite imports its clients in conftest.py, loaded before any plugin hook:
    # replaced when this plugin is imported (``-p robotgate_wrap``).
    import crawlee.http_clients as clients

    from robotgate.integrations._follow import MAX_REDIRECTS
    from robotgate.integrations.crawlee import RobotGateHttpClient

    def wrapping(kind: type[Any], follow_name: str) -> type[Any]:
        class Wrapped(RobotGateHttpClient):
            """``kind(...)`` as the suite makes it, behind a gate of its own: it follows no
            redirect itself (the gate follows them, judging each hop)."""

            def __init__(self, *args: Any, persist_cookies_per_session: bool = True,
                         **kwargs: Any) -> None:
                _made_one()
                follow = kwargs.pop(follow_name, True)
                limit = kwargs.get("max_redirects", MAX_REDIRECTS)  # impit's, ignored unfollowed
                inner = kind(*args, persist_cookies_per_session=persist_cookies_per_session,
                             **{follow_name: False}, **kwargs)
                super().__init__(_gate("crawlee"), inner, follow_redirects=follow,
                                 persist_cookies_per_session=persist_cookies_per_session,
                                 max_redirects=limit)

            async def __aenter__(self) -> Any:
                if self.gate._closed:  # entered again after an exit: a gate of its own
                    self.gate = _gate("crawlee")
                return await super().__aenter__()

            async def __aexit__(self, *exc: Any) -> None:
                try:
                    await super().__aexit__(*exc)
                finally:
                    await self.gate.close()

        Wrapped.__name__ = Wrapped.__qualname__ = f"RobotGate{kind.__name__}"
        return Wrapped

    clients.ImpitHttpClient = wrapping(clients.ImpitHttpClient, "follow_redirects")  # type: ignore[misc]
    clients.HttpxHttpClient = wrapping(clients.HttpxHttpClient, "follow_redirects")  # type: ignore[misc]
    with contextlib.suppress(ImportError, AttributeError):  # curl_cffi is optional
        clients.CurlImpersonateHttpClient = wrapping(  # type: ignore[misc]
            clients.CurlImpersonateHttpClient, "allow_redirects")


if MODE == "crawlee":
    _patch_crawlee()


def _crawlee_robots_without_delay() -> None:
    """crawlee's test server's robots.txt asks every robot for ``crawl-delay: 10``, which a
    gate keeps in full (never quietly shortened): each test with a redirect would take 20 s
    wrapped, a fraction of a second plain.  Its HTTP-client tests test no pacing, so in
    both runs (plain and wrapped, the same fixture) the server serves it without its
    ``crawl-delay`` lines; everything else in it stays."""
    server = sys.modules.get("tests.unit.server")
    robots = getattr(server, "ROBOTS_TXT", None)
    if isinstance(robots, bytes):
        server.ROBOTS_TXT = b"\n".join(  # type: ignore[union-attr]
            line for line in robots.split(b"\n")
            if not line.strip().lower().startswith(b"crawl-delay"))


def pytest_configure(config: pytest.Config) -> None:
    for patch in (_patch_aiohttp, _patch_httpx):
        with contextlib.suppress(ImportError):
            patch()


def pytest_sessionstart(session: pytest.Session) -> None:
    # After the suite's conftest.py imported its server (crawlee's suite only).
    _crawlee_robots_without_delay()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    _current.append(item.nodeid)
    try:
        return (yield)
    finally:
        _current.pop()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.outcome == "passed" and report.when != "call":
        _outcomes.setdefault(report.nodeid, "passed")
    elif report.outcome == "passed":
        if _outcomes.get(report.nodeid, "passed") == "passed":
            _outcomes[report.nodeid] = "passed"
    else:  # a failure in any phase fails the test; a skip skips it
        if _outcomes.get(report.nodeid) != "failed":
            _outcomes[report.nodeid] = "failed" if report.outcome == "failed" else "skipped"


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("ROBOTGATE_SUITE_OUT")
    if out:
        with open(out, "w") as file:
            json.dump({"outcomes": _outcomes, "made_client": sorted(_made)}, file, indent=1)
