"""A compressed robots.txt is read as rules through every client, or counts as unreachable.

Each case is one origin on loopback whose robots.txt comes in a content coding
(stacked ones included), whatever the client asked for.  Through aiohttp's
``gate.fetch``, a session with ``gate.middleware``, the httpx transport, the
Scrapy middleware and ``gate.crawl``: a decodable body's rules refuse
``/private/``; a body the gate cannot decode makes the whole site disallowed,
the fetch outcome saying why, and the server sees no page request.
"""

from __future__ import annotations

import asyncio
import bz2
import gzip
import importlib
import json
import lzma
import subprocess
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import brotli
import pytest
from aiohttp import web
from multidict import CIMultiDict

from robotgate import Disallowed, RobotGate
from robotgate.crawl import CrawlResult
from robotgate.decision import Decision, Rule

httpx = pytest.importorskip("httpx")
pytest.importorskip("scrapy", reason="Scrapy is not installed: pip install 'robotgate[scrapy]'")
from robotgate.integrations.httpx import RobotGateTransport  # noqa: E402

AGENT = "CodingTest/1.0 (+https://example.com/bot)"
ROOT = Path(__file__).resolve().parents[2]
RULES = b"User-agent: *\nDisallow: /private/\n"


def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-15)
    return packer.compress(data) + packer.flush()


@dataclass(frozen=True)
class Case:
    """One origin's robots.txt: its ``Content-Encoding`` lines and body."""

    name: str
    codings: tuple[str, ...]
    body: bytes
    #: What the decision's reason says when the body cannot be decoded (None: it can).
    undecodable: str | None = None


READABLE = [
    Case("gzip", ("gzip",), gzip.compress(RULES)),
    Case("x-gzip", ("x-gzip",), gzip.compress(RULES)),
    Case("deflate", ("deflate",), zlib.compress(RULES)),
    Case("raw-deflate", ("deflate",), _raw_deflate(RULES)),
    Case("br", ("br",), brotli.compress(RULES)),
    Case("gzip-gzip", ("gzip, gzip",), gzip.compress(gzip.compress(RULES))),
    Case("identity-gzip", ("identity, gzip",), gzip.compress(RULES)),
    Case("gzip-br", ("gzip, br",), brotli.compress(gzip.compress(RULES))),
    Case("gzip-br-lines", ("gzip", "br"), brotli.compress(gzip.compress(RULES))),
    Case("utf-8", ("utf-8",), RULES),  # names no coding: the body is read as it is
    # A token that names no coding over a body that is no text: undone as what it is.
    Case("unknown-over-gzip", ("x-unknown",), gzip.compress(RULES)),
    Case("unknown-over-zlib", ("x-unknown",), zlib.compress(RULES)),
]


def _zstd() -> Any:
    """Python 3.14's zstd, or its backport (Scrapy 2.19 needs it before 3.14), or None."""
    for name in ("compression.zstd", "backports.zstd"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


if (zstd := _zstd()) is not None:
    READABLE.append(Case("zstd", ("zstd",), zstd.compress(RULES)))


def _layers(data: bytes, count: int) -> bytes:
    for _ in range(count):
        data = gzip.compress(data)
    return data


UNREADABLE = [
    Case("corrupt-gzip", ("gzip",), b"User-agent: *\nDisallow: /private/\n",
         "came gzip-encoded and could not be decoded"),
    Case("corrupt-inner", ("gzip, br",), brotli.compress(b"not gzip at all"),
         "came gzip-encoded and could not be decoded"),
    Case("compress", ("compress",), b"\x1f\x9d\x90" + RULES,
         "came compress-encoded, a coding robotgate does not decode"),
    Case("six-layers", (", ".join(["gzip"] * 6),), _layers(RULES, 6),
         "came in more than 5 content codings"),
    # Never "no rules": bytes that are no text under a token that names no coding.
    Case("unknown-over-binary", ("x-unknown",), b"\x00\x01\x02" + RULES,
         "a coding robotgate does not know, and is not text"),
    Case("unknown-over-cut-zlib", ("x-unknown",), zlib.compress(RULES)[:2] + b"\x00",
         "a coding robotgate does not know, and is not text"),
]
# Compressed bodies sent as text (no Content-Encoding, or identity), and brotli under
# any label: recognised by their first bytes and read as the rules they hold.
_FORMATS = {"gzip": gzip.compress(RULES), "zlib": zlib.compress(RULES),
            "deflate": _raw_deflate(RULES), "bzip2": bz2.compress(RULES),
            "xz": lzma.compress(RULES)}
UNDECLARED = [
    *(Case(f"{name}-sent-{label or 'bare'}", (label,) if label else (), body)
      for name, body in _FORMATS.items() for label in ("", "identity")),
    *(Case(f"brotli-sent-{label or 'bare'}", (label,) if label else (), brotli.compress(RULES))
      for label in ("", "identity", "gzip", "x-gzip", "deflate", "utf-8")),
]
#: Bytes that are no text and no data decoded here, sent as text: never "no rules".
UNDECLARED_BINARY = [
    Case("binary-sent-bare", (), b"\x00\x01\x02" + RULES,
         "came with no content coding and is not text"),
    Case("binary-sent-identity", ("identity",), b"\x9f\x02\x17" + RULES,
         "came with no content coding and is not text"),
    Case("corrupt-bzip2-sent-bare", (), b"BZh91AY&SY" + RULES,
         "is bzip2 data that could not be decoded"),
]
#: What decoding gives is judged as a body sent plain is: NUL bytes are no text, gzipped
#: or bzip2-compressed (labelled or not) or in a gzip-twice bomb as much as sent plain.
NULS = bytes(100)
NOT_TEXT = [
    Case("nuls-sent-bare", (), NULS, "came with no content coding and is not text"),
    Case("nuls-gzip", ("gzip",), gzip.compress(NULS), "came gzip-encoded and is not text"),
    Case("nuls-gzip-sent-bare", (), gzip.compress(NULS),
         "came as compressed data and is not text once decoded"),
    Case("nuls-bzip2-sent-bare", (), bz2.compress(NULS),
         "came as compressed data and is not text once decoded"),
    Case("nuls-bzip2-sent-identity", ("identity",), bz2.compress(NULS),
         "came as compressed data and is not text once decoded"),
    Case("nuls-gzip-twice-bomb", (), _layers(bytes(16 * 1024 * 1024), 2),
         "came as compressed data and is not text once decoded"),
    Case("nuls-gzip-twice-bomb-gzip", ("gzip",), _layers(bytes(16 * 1024 * 1024), 2),
         "is not text once decoded"),
    # A gzip header and nothing after it: no robots.txt at all, so not "no rules" either.
    Case("gzip-header-alone", ("gzip",), gzip.compress(b"")[:10],
         "compressed data that ends before its content"),
    Case("gzip-header-alone-sent-bare", (), gzip.compress(b"")[:10],
         "compressed data that ends before its content"),
]
#: Without a brotli decoder (see :func:`no_brotli`): "gzip, br" cannot be read.
NO_BROTLI = Case("gzip-br", ("gzip, br",), brotli.compress(gzip.compress(RULES)),
                 "no brotli decoder is installed")
#: Without a brotli decoder, brotli sent as text is no text: unreachable.
NO_BROTLI_UNDECLARED = [
    Case(f"brotli-sent-{label or 'bare'}", (label,) if label else (), brotli.compress(RULES),
         "is not text") for label in ("", "identity", "utf-8")]


class Origins:
    """One loopback port per case: ``/robots.txt`` as the case says, any other path a page.

    Records the paths each case's origin was asked for.
    """

    def __init__(self, cases: list[Case]) -> None:
        self.cases = cases
        self.by_port: dict[int, Case] = {}
        self.paths: dict[str, list[str]] = {case.name: [] for case in cases}
        self._runner: web.AppRunner | None = None

    async def __aenter__(self) -> Origins:
        app = web.Application()
        app.router.add_get("/{tail:.*}", self._answer)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        for case in self.cases:
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            server = site._server
            assert server is not None
            port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self.by_port[port] = case
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def url(self, case: Case, path: str) -> str:
        port = next(p for p, c in self.by_port.items() if c is case)
        return f"http://127.0.0.1:{port}{path}"

    def urls(self) -> list[str]:
        return [self.url(case, path) for case in self.cases
                for path in ("/page/1", "/private/1")]

    def case_of(self, url: str) -> Case:
        return self.by_port[int(url.split(":")[2].split("/")[0])]

    async def _answer(self, request: web.Request) -> web.Response:
        sockname = request.transport.get_extra_info("sockname")  # type: ignore[union-attr]
        case = self.by_port[sockname[1]]
        self.paths[case.name].append(request.path)
        if request.path != "/robots.txt":
            return web.Response(text="<html>a page</html>", content_type="text/html")
        headers = CIMultiDict({"Content-Type": "text/plain"})
        for coding in case.codings:
            headers.add("Content-Encoding", coding)
        return web.Response(body=case.body, headers=headers)


Outcomes = dict[str, Decision | int]


def check(origins: Origins, seen: Outcomes) -> None:
    """What each client saw: a page's status, or the decision that refused it."""
    for case in origins.cases:
        page, private = seen[origins.url(case, "/page/1")], seen[origins.url(case, "/private/1")]
        if case.undecodable is None:
            assert page == 200, (case.name, page)
            assert isinstance(private, Decision), (case.name, private)
            assert private.rule is not None and private.rule.line == 2, (case.name, private)
            assert origins.paths[case.name] == ["/robots.txt", "/page/1"], case.name
        else:
            for decision in (page, private):
                assert isinstance(decision, Decision), (case.name, decision)
                assert decision.outcome == "unreachable" and decision.rule is None
                assert case.undecodable in decision.reason, (case.name, decision.reason)
            assert origins.paths[case.name] == ["/robots.txt"], case.name


# -- the clients ------------------------------------------------------------------------


async def through_gate_fetch(origins: Origins) -> Outcomes:
    seen: Outcomes = {}
    async with RobotGate(AGENT, delay=0) as gate:
        for url in origins.urls():
            try:
                async with gate.fetch(url) as resp:
                    seen[url] = resp.status
            except Disallowed as no:
                seen[url] = no.decision
    return seen


async def through_middleware(origins: Origins) -> Outcomes:
    seen: Outcomes = {}
    async with RobotGate(AGENT, delay=0) as gate, aiohttp.ClientSession(
            middlewares=(gate.middleware,)) as session:
        for url in origins.urls():
            try:
                async with session.get(url) as resp:
                    seen[url] = resp.status
            except Disallowed as no:
                seen[url] = no.decision
    return seen


async def through_httpx(origins: Origins) -> Outcomes:
    seen: Outcomes = {}
    async with RobotGate(AGENT, delay=0) as gate, httpx.AsyncClient(
            transport=RobotGateTransport(gate)) as client:
        for url in origins.urls():
            try:
                seen[url] = (await client.get(url)).status_code
            except Disallowed as no:
                seen[url] = no.decision
    return seen


async def through_crawl(origins: Origins) -> Outcomes:
    results: list[CrawlResult] = []

    async def handler(url: str, resp: Any) -> list[str]:
        await resp.read()
        return []

    async with RobotGate(AGENT, delay=0) as gate:
        await gate.crawl(origins.urls(), handler, on_result=results.append)
    return {r.url: r.decision if r.decision is not None else r.status for r in results}


async def through_scrapy(origins: Origins, runner: str) -> Outcomes:
    """One Scrapy crawl in a subprocess (a fresh reactor); dropped requests' decisions
    come back as the runner reports them (outcome, line, message)."""
    config = {"urls": origins.urls(), "settings": {"ROBOTGATE_DELAY": 0}}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", runner, json.dumps(config), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 60)  # hang guard
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()[-4000:]
    result = json.loads(out.decode().strip().splitlines()[-1])
    seen: Outcomes = {url: status for url, status in result["pages"]}
    for dropped in result["dropped"]:
        assert dropped["error"] == "RobotsDisallowed", dropped
        seen[dropped["url"]] = _as_decision(dropped)
    return seen


def _as_decision(dropped: dict[str, Any]) -> Decision:
    """A stand-in Decision from what the Scrapy runner reports of one."""
    line = dropped["line"]
    rule = Rule(False, "/private/", line) if line is not None else None
    # The middleware's message is "Forbidden by robots.txt: <GET url>: <reason>".
    return Decision(False, dropped["message"], rule=rule, outcome=dropped["outcome"])


CLIENTS = {
    "gate.fetch": through_gate_fetch,
    "gate.middleware": through_middleware,
    "httpx": through_httpx,
    "gate.crawl": through_crawl,
}


@contextmanager
def no_brotli(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No brotli decoder importable (as where neither brotli nor brotlicffi is installed)."""
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "brotli", None)
        patch.setitem(sys.modules, "brotlicffi", None)
        yield


# -- the promise --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_compressed_robots_txt_through_each_aiohttp_and_httpx_client(client: str) -> None:
    async with Origins(READABLE + UNREADABLE) as origins:
        check(origins, await CLIENTS[client](origins))


@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_compressed_bodies_sent_as_text_are_read_by_their_first_bytes(client: str) -> None:
    async with Origins(UNDECLARED + UNDECLARED_BINARY) as origins:
        check(origins, await CLIENTS[client](origins))


@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_what_decoding_gives_is_judged_as_text_sent_plain_is(client: str) -> None:
    assert len(NOT_TEXT[5].body) < 1024  # a bomb: 16 MiB of NULs in under 1 KB
    async with Origins(NOT_TEXT) as origins:
        check(origins, await CLIENTS[client](origins))


@pytest.mark.slow
async def test_what_decoding_gives_is_judged_as_text_sent_plain_is_through_scrapy() -> None:
    async with Origins(NOT_TEXT) as origins:
        check(origins, await through_scrapy(origins, "testbed.scrapy_crawl_runner"))


def test_an_empty_gzip_stream_is_an_empty_robots_txt() -> None:
    # A whole stream of nothing is the site's empty file (allow all), unlike a header alone.
    from robotgate.policy.content_coding import decode_capped

    assert decode_capped(gzip.compress(b""), ["gzip"], 500 * 1024) == b""
    assert decode_capped(b"", ["gzip"], 500 * 1024) == b""


@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_without_a_brotli_decoder_brotli_sent_as_text_is_unreachable(
        client: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async with Origins(NO_BROTLI_UNDECLARED) as origins:
        with no_brotli(monkeypatch):
            seen = await CLIENTS[client](origins)
    check(origins, seen)


@pytest.mark.parametrize("client", sorted(CLIENTS))
async def test_without_a_brotli_decoder_gzip_br_is_unreachable(
        client: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async with Origins([NO_BROTLI]) as origins:
        with no_brotli(monkeypatch):
            seen = await CLIENTS[client](origins)
    check(origins, seen)


@pytest.mark.slow
async def test_compressed_robots_txt_through_the_scrapy_middleware() -> None:
    async with Origins(READABLE + UNREADABLE) as origins:
        check(origins, await through_scrapy(origins, "testbed.scrapy_crawl_runner"))


@pytest.mark.slow
async def test_without_a_brotli_decoder_gzip_br_is_unreachable_through_scrapy() -> None:
    async with Origins([NO_BROTLI]) as origins:
        check(origins, await through_scrapy(origins, "tests.contract.scrapy_without_brotli"))


def test_bzip2_and_xz_bombs_sent_as_text_stop_at_the_limit() -> None:
    from robotgate.policy.content_coding import MAX_XZ_MEMORY, UndecodableBody, decode_capped

    spaces = b" " * (4 * 1024 * 1024)  # text, so that the limit is what stops it
    for bomb in (bz2.compress(spaces), lzma.compress(spaces)):
        assert decode_capped(bomb, [], 500 * 1024) == spaces[:500 * 1024]
    # An xz header asking for more memory than allowed is refused, not obeyed.
    greedy = lzma.compress(RULES, filters=[{"id": lzma.FILTER_LZMA2,
                                            "dict_size": 4 * MAX_XZ_MEMORY}])
    with pytest.raises(UndecodableBody, match="xz data that could not be decoded"):
        decode_capped(greedy, ["identity"], 500 * 1024)
