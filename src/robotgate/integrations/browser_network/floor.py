"""The floor of a browser the gate is the only network of: Chromium's launch options
(its proxy a black hole, loopback through it, WebRTC held to it), the check that a
context has them (:func:`refuse_unfloored`), and the route's proxy
(:func:`via`); the route's request client is :mod:`.sender`'s.
Playwright's :func:`~robotgate.integrations.playwright.attach`, crawlee's
``PlaywrightCrawler`` and crawl4ai's ``RobotGateCrawler`` all launch and check through
here (see docs/browser.md, "The floor")."""

from __future__ import annotations

import asyncio
import json
import os
import socket
from base64 import b64encode
from collections.abc import MutableMapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import (
    Browser,
    BrowserContext,
    Page,
    ProxySettings,
)
from playwright.async_api import Error as PlaywrightError

from ...errors import Error
from ...gate.aiohttp_client import Route as Via
from ...private_parts import PLAYWRIGHT_OPTIONS, PrivatePartMissing

__all__ = ["BLACK_HOLE", "LAUNCH_ARGS", "UnsafeBrowser", "checked_proxy", "floor_launch",
           "launch_options", "preloading_off", "proxy_url", "refuse_unfloored",
           "via"]

#: The browser's proxy: nothing can listen on port 0 (binding it picks another port), so
#: a connection to it is refused at once, and no later listener can take it over (a
#: closed port could be bound again; a listener that never accepts would hang pages).
BLACK_HOLE = "http://127.0.0.1:0"
_LOOPBACK_TOO = "<-loopback>"  # Chromium sends loopback past its proxy unless told
_PROXIED_UDP_ONLY = "disable_non_proxied_udp"  # WebRTC: no UDP, TCP through the proxy only
#: Chromium's switches of the floor (:func:`launch_options` adds them): loopback through
#: the proxy too, and WebRTC only through the proxy.
LAUNCH_ARGS = [f"--proxy-bypass-list={_LOOPBACK_TOO}",
               f"--webrtc-ip-handling-policy={_PROXIED_UDP_ONLY}"]
# Switches that would give Chromium a proxy (or none) other than the black hole.
_OTHER_PROXY = ("--no-proxy-server", "--proxy-pac-url", "--proxy-auto-detect")


# How long attach's probe of the floor waits for a request to fail (under the floor it
# fails at once; a connection that reached the probe's listener hangs until then).
_PROBE_TIMEOUT = 3.0


class UnsafeBrowser(Error, ValueError):
    """:func:`attach` was given a context whose browser can make requests no route
    sees, or a proxy robots.txt cannot be asked through; the message names the
    setting to use."""




def checked_proxy(proxy: ProxySettings | None) -> ProxySettings | None:
    """``proxy``, the one the pages go through (None: direct); raises
    :class:`UnsafeBrowser` for one robots.txt cannot be asked through."""
    if proxy is None:
        return None
    scheme = proxy_url(proxy).split("://", 1)[0].lower()
    if scheme not in ("http", "https"):
        raise UnsafeBrowser(
            f"robots.txt cannot be asked through the context's {scheme} proxy (the gate's "
            "client speaks to http and https proxies only): use an http(s) proxy")
    return proxy


def proxy_url(proxy: ProxySettings) -> str:
    """The proxy's server as a URL (Playwright takes ``host:port`` as ``http://``)."""
    server = proxy.get("server", "").strip()
    return server if "://" in server else "http://" + server


def via(proxy: ProxySettings | None, url: str) -> Via | None:
    """The route a request to ``url`` takes, robots.txt's too: through ``proxy`` unless
    its ``bypass`` names the host (the rule of Playwright's request client: a name ends
    with one of the comma-separated domains)."""
    if proxy is None:
        return None
    host = "." + (urlsplit(url).hostname or "")
    for domain in (proxy.get("bypass") or "").split(","):
        domain = domain.strip()
        if domain and host.endswith(domain if domain.startswith(".") else "." + domain):
            return None
    username = proxy.get("username")
    if not username:
        return Via(None, proxy_url(proxy))
    token = b64encode(f"{username}:{proxy.get('password') or ''}".encode()).decode("ascii")
    return Via(None, proxy_url(proxy), proxy_headers={"Proxy-Authorization": f"Basic {token}"})


def launch_options(*args: str) -> dict[str, Any]:
    """The keyword arguments that give Chromium no network but the gate, for
    ``playwright.chromium.launch`` and ``launch_persistent_context``: its proxy
    :data:`BLACK_HOLE` (loopback included) and WebRTC held to that proxy
    (:data:`LAUNCH_ARGS`), so that a request no route fulfils reaches nothing.  ``args``:
    Chromium switches of your own, put before the floor's (the last of a switch wins).
    The pages' own proxy, if any, goes to :func:`attach` (``proxy=``).

    >>> launch_options("--headless")["args"][0]
    '--headless'
    """
    return {"proxy": {"server": BLACK_HOLE}, "args": [*args, *LAUNCH_ARGS]}


def preloading_off(user_data_dir: str | os.PathLike[str]) -> Path:
    """Make ``user_data_dir`` a Chromium profile whose browser preloads nothing (its
    "Preload pages" setting off: no speculation rules' prefetch or prerender, no
    preconnect, no DNS prefetch), keeping its other preferences; returns its path, for
    ``playwright.chromium.launch_persistent_context``.  Not needed for the promises
    (under :func:`launch_options` what no route sees reaches nothing): it spares the
    black hole the attempts, and the system's resolver the names."""
    where = Path(user_data_dir)
    preferences = where / "Default" / "Preferences"
    preferences.parent.mkdir(parents=True, exist_ok=True)
    try:
        kept = json.loads(preferences.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        kept = {}
    if not isinstance(kept, dict):
        kept = {}
    net = kept.get("net")
    kept["net"] = {**(net if isinstance(net, dict) else {}), "network_prediction_options": 2}
    preferences.write_text(json.dumps(kept), encoding="utf-8")
    return where


def _made_with(owner: Browser | BrowserContext) -> dict[str, Any]:
    """The options Playwright launched a browser or made a context with, kept on its
    implementation object (Playwright does not let them be read): PrivatePartMissing
    where it keeps them no more, rather than a check that sees no options."""
    options = getattr(getattr(owner, "_impl_obj", None), "_options", None)
    if not isinstance(options, dict):
        raise PrivatePartMissing(PLAYWRIGHT_OPTIONS)
    return options


async def _switches(context: BrowserContext) -> list[str]:
    """Chromium's switches that set its network (the proxy's, WebRTC's): as Playwright
    launched it (its proxy setting, then ``args``, as Playwright passes them), or, for
    a browser launched without one (connected over CDP, say), as Chromium tells
    (``Browser.getBrowserCommandLine``, answered only under ``--enable-automation``)."""
    browser = context.browser
    launched = _made_with(browser) if browser is not None else {}
    proxy = launched.get("proxy")
    if isinstance(proxy, dict):
        switches = [f"--proxy-server={proxy_url(proxy)}"]  # type: ignore[arg-type]
        if proxy.get("bypass"):
            switches.append(f"--proxy-bypass-list={proxy['bypass']}")
        return switches + [str(arg) for arg in launched.get("args") or ()]
    if browser is not None:
        with suppress(PlaywrightError):
            session = await browser.new_browser_cdp_session()
            try:
                told = await session.send("Browser.getBrowserCommandLine")
            finally:
                await session.detach()
            return [str(arg) for arg in told.get("arguments", ())]
    return [str(arg) for arg in launched.get("args") or ()]


def _floor_missing(switches: Sequence[str]) -> list[str]:
    """What Chromium launched with ``switches`` lacks of the floor, each as the setting
    that gives it."""
    last: dict[str, str] = {}
    for switch in switches:
        name, _, value = switch.partition("=")
        last[name] = value.strip("'\"")
    missing = []
    server = last.get("--proxy-server")
    if server is None or proxy_url({"server": server}) != BLACK_HOLE:
        missing.append(f"the proxy {BLACK_HOLE} (launch with **launch_options(); the pages' "
                       "own proxy goes to attach(..., proxy=...))")
    others = [name for name in _OTHER_PROXY if name in last]
    if others:
        missing.append("no " + " or ".join(others))
    if last.get("--proxy-bypass-list") != _LOOPBACK_TOO:
        missing.append(f"--proxy-bypass-list={_LOOPBACK_TOO} last (loopback through the "
                       "proxy too: launch_options() puts it there)")
    # (``--force-webrtc-ip-handling-policy``, a name seen in advice, does nothing: STUN
    # still reached a private address under it.)
    if last.get("--webrtc-ip-handling-policy") != _PROXIED_UDP_ONLY:
        missing.append(f"--webrtc-ip-handling-policy={_PROXIED_UDP_ONLY} last "
                       "(WebRTC through the proxy only: launch_options() puts it there)")
    return missing


async def _reaches(context: BrowserContext, page: Page | None) -> bool:
    """Whether a request of ``context`` that no route fulfils reaches anything (the
    floor is not in place, whatever the switches say: a context's own
    ``new_context(proxy=...)``, which Playwright does not let be read, a policy): one
    made through the DevTools protocol from ``page`` (else the context's first page, or
    a new one) to a listener on loopback must fail to connect to the proxy.  (No page
    is opened when there is one: crawlee takes a page it did not open for its own.)"""
    probe = page or next(iter(context.pages), None)
    opened = probe is None
    if probe is None:
        probe = await context.new_page()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        try:
            session = await context.new_cdp_session(probe)
            try:
                frame = (await session.send("Page.getFrameTree"))["frameTree"]["frame"]["id"]
                # Under the floor this fails at once; a connection that reached the
                # listener is never answered, and fails by the timeout.
                loaded = await asyncio.wait_for(session.send("Network.loadNetworkResource", {
                    "frameId": frame, "url": f"http://127.0.0.1:{listener.getsockname()[1]}/",
                    "options": {"disableCache": True, "includeCredentials": False}}),
                    _PROBE_TIMEOUT)
            finally:
                with suppress(PlaywrightError):
                    await session.detach()
            failure = str(loaded.get("resource", {}).get("netErrorName"))
        except (PlaywrightError, asyncio.TimeoutError, KeyError):
            failure = ""  # it could not be told: as if it reached
        finally:
            if opened:
                await probe.close()
        try:
            listener.accept()[0].close()
        except BlockingIOError:
            return failure != "net::ERR_PROXY_CONNECTION_FAILED"
        return True


async def refuse_unfloored(context: BrowserContext, page: Page | None) -> None:
    """Raise :class:`UnsafeBrowser` when a request of ``context`` no route fulfils
    would reach anything, naming the settings that close it (``page``: the one
    attached, if one is)."""
    missing = _floor_missing(await _switches(context))
    if _made_with(context).get("serviceWorkers") != "block":
        # A service worker's requests carry no document to judge them by.
        missing.append("service workers blocked (new_context or launch_persistent_context "
                       "with service_workers='block')")
    if not missing and await _reaches(context, page):
        missing.append(f"no proxy of the context's own (new_context(proxy=...)): the "
                       f"browser's is {BLACK_HOLE}, the pages' goes to attach(proxy=...)")
    if missing:
        raise UnsafeBrowser("the browser has a network of its own, past the gate: it needs "
                            + "; ".join(missing))


def floor_launch(options: MutableMapping[str, Any]) -> None:
    """Give a launch's keyword arguments (``options``, changed in place: crawlee's
    ``browser_launch_options``, crawl4ai's) the floor of :func:`launch_options`: the
    black hole as the proxy, the floor's switches last.  ValueError for a proxy of
    the launch's own (the pages' proxy goes to ``attach(..., proxy=...)``)."""
    proxy = options.get("proxy")
    if proxy is not None and proxy_url(proxy) != BLACK_HOLE:
        raise ValueError("the launch's proxy: the browser's own proxy must be robotgate's "
                         "black hole (its pages' requests go through the gate); leave it "
                         "unset, and give the pages' proxy to attach(..., proxy=...)")
    floored = launch_options(*[str(arg) for arg in options.get("args") or ()
                               if str(arg) not in LAUNCH_ARGS])
    options.update(floored)
