"""Run URLs through Scrapy with RobotGateMiddleware and print one result per URL (JSON).

The Scrapy driver of tests/contract/test_request_paths.py, in a subprocess so
that each run gets a fresh reactor::

    python -m tests.contract.scrapy_paths_runner '{"urls": [...], "sequential": true,
                                                   "settings": {...}}'

``sequential``: each URL is requested once the one before has an answer (as an
``await`` per URL would); otherwise all are requested at once.  ``meta`` (optional):
each URL's request meta; a ``robotgate_pointed_by`` given as ``{"page": ..., "public":
...}`` is that :class:`~robotgate.policy.provenance.Provenance`.  ``follow``: each
page's links (``<a href>``) are requested too, their results printed after the URLs'.
Each result is ``{"status": N, "usage": {...}}`` or ``{"refused": outcome, "reason":
text}`` (a robotgate refusal) or ``{"error": name}``; a failure's ``said``: a robotgate
error's str, repr and args (with ``"said": true`` in the config).
"""

from __future__ import annotations

import json
import socket
import sys
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess

MIDDLEWARES = {
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "robotgate.integrations.scrapy.RobotGateMiddleware": 100,
}


def answer_names(hosts: dict[str, Any]) -> None:
    """``config["hosts"]``: names the system's look-ups answer.  A name's answer is a
    list of addresses (every look-up) or a list of such lists (one look-up after the
    other, the last repeating); or ``{"getaddrinfo": ..., "gethostbyname": ...}``,
    one such answer for each function.  gethostbyname gives the first IPv4 address."""
    system_getaddrinfo, system_gethostbyname = socket.getaddrinfo, socket.gethostbyname
    asked: dict[tuple[str, str], int] = {}

    def look_up(name: str, function: str) -> list[str]:
        answers = hosts[name]
        if isinstance(answers, dict):
            answers = answers[function]
        if not answers or isinstance(answers[0], str):
            return list(answers)
        n = asked.get((name, function), 0)
        asked[name, function] = n + 1
        return list(answers[min(n, len(answers) - 1)])

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name not in hosts:
            return system_getaddrinfo(host, port, *args, **kwargs)
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (a, int(port or 0), 0, 0) if ":" in a else (a, int(port or 0)))
                for a in look_up(name, "getaddrinfo")]

    def gethostbyname(host: str) -> str:
        if host not in hosts:
            return system_gethostbyname(host)
        return next(a for a in look_up(host, "gethostbyname") if ":" not in a)

    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
    socket.gethostbyname = gethostbyname
    # Twisted's getaddrinfo resolver (Scrapy's CachingHostnameResolver connects through
    # it, over both families) took the function as a default argument at import.
    from twisted.internet import _resolver

    _resolver.GAIResolver.__init__.__defaults__ = (None, getaddrinfo)


def _meta(given: dict[str, Any]) -> dict[str, Any]:
    from robotgate.integrations.scrapy.middleware import POINTED_BY
    from robotgate.policy.provenance import Provenance

    meta = dict(given)
    pointed_by = meta.get(POINTED_BY)
    if isinstance(pointed_by, dict):
        meta[POINTED_BY] = Provenance(**pointed_by)
    return meta


def main(argv: list[str]) -> int:
    config: dict[str, Any] = json.loads(argv[1])
    answer_names(config.get("hosts", {}))
    urls: list[str] = config["urls"]
    metas: list[dict[str, Any]] = config.get("meta") or [{} for _ in urls]
    sequential = bool(config.get("sequential"))
    follow = bool(config.get("follow"))
    results: list[dict[str, Any] | None] = [None] * len(urls)

    def said(exc: BaseException) -> dict[str, list[str]]:
        """What a robotgate error says (its str, repr and args), if the config asks."""
        from robotgate import Error

        if not config.get("said") or not isinstance(exc, Error):
            return {}
        return {"said": [str(exc), repr(exc), repr(exc.args)]}
    linked: list[dict[str, Any]] = []

    class Paths(scrapy.Spider):
        name = "paths"

        def _request(self, i: int) -> scrapy.Request:
            return scrapy.Request(urls[i], callback=self.parse, errback=self.failed,
                                  dont_filter=True, cb_kwargs={"i": i},
                                  priority=len(urls) - i, meta=_meta(metas[i]))

        async def start(self) -> Any:
            for i in range(1 if sequential else len(urls)):
                yield self._request(i)

        def _next(self, i: int) -> Any:
            if sequential and i + 1 < len(urls):
                yield self._request(i + 1)

        def parse(self, response: Any, i: int) -> Any:
            results[i] = {"status": response.status,
                          "usage": response.meta.get("robotgate_usage")}
            if follow:
                for href in response.css("a::attr(href)").getall():
                    yield response.follow(href, callback=self.link, errback=self.link_failed,
                                          dont_filter=True)
            yield from self._next(i)

        def link(self, response: Any) -> Any:
            linked.append({"status": response.status})
            yield from ()

        def link_failed(self, failure: Any) -> Any:
            decision = getattr(failure.value, "decision", None)
            linked.append({"refused": decision.outcome or "rule", "reason": decision.reason}
                          if decision is not None else {"error": type(failure.value).__name__})
            yield from ()

        def failed(self, failure: Any) -> Any:
            exc = failure.value
            i = failure.request.cb_kwargs["i"]
            decision = getattr(exc, "decision", None)
            response = getattr(exc, "response", None)
            if decision is not None:
                results[i] = {"refused": decision.outcome or "rule", "reason": decision.reason,
                              **said(exc)}
            elif response is not None:  # HttpErrorMiddleware: a 4xx/5xx answer
                results[i] = {"status": response.status, "usage": None}
            else:
                results[i] = {"error": type(exc).__name__, "reason": str(exc), **said(exc)}
            yield from self._next(i)

    settings = {
        "ROBOTSTXT_OBEY": True,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "ERROR",
        "RETRY_ENABLED": False,
        "USER_AGENT": "TestBot/1.0 (+https://example.com/bot)",
        "DOWNLOADER_MIDDLEWARES": MIDDLEWARES,
        **config.get("settings", {}),
    }
    process = CrawlerProcess(settings=settings)
    process.crawl(Paths)
    process.start()
    print(json.dumps([*results, *linked]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
