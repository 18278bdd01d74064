"""Reading what pages and sites say: page directives and sitemaps, by instructions and memory.

    python benchmarks/pages_bench.py [--quick] [--before-src OLD/src]
        [--only directives,sitemap,memory,index] [--parsers robotgate,robotgate-stream,scrapy,usp]
        [--json benchmarks/results/pages.json]

Counts, not clocks (the machine is shared):

* ``directives``: callgrind instructions of one ``page_directives`` call on a 100 KB HTML page
  with a 6 KB head holding a robots meta tag (and aiohttp's response headers), the difference
  between a child making 410 calls and one making 10, over 400;
* ``sitemap``: callgrind instructions of parsing a 50,000-URL urlset (11 MB, each ``<url>`` with
  ``loc``, ``lastmod``, ``changefreq`` and ``priority``): robotgate's ``parse_sitemap`` and its
  entries handed out as they are read (``SitemapParser.take``, where the tree has it), Scrapy's
  lxml ``Sitemap`` and ultimate-sitemap-parser's ``XMLSitemapParser`` in the same run; a child
  that parses less one that only reads the file;
* ``memory``: tracemalloc's peak while iterating that file's entries, keeping none (the body is
  read from disk in 64 KiB pieces where the parser takes pieces; Scrapy and usp take it whole,
  read before tracing starts);
* ``index``: the peak resident memory a child gains while walking an index of 20 sitemaps of
  50,000 URLs through ``SitemapReader`` (``gate.sitemaps``' reader, the transport in memory),
  keeping no entry, and its CPU seconds: one walk, and two walks of the same site at once;
  usp's ``sitemap_tree_for_homepage`` over the same files (its web client in memory) beside
  it.  Resident memory, not tracemalloc: under tracemalloc a walk of 1,000,000 entries takes
  over ten minutes; the peak is the kernel's (``ru_maxrss``) less what the child held before
  the walk.

``--before-src`` runs another tree's robotgate (e.g. ``git archive`` of an older commit) in the
same run.  Each measured run is a child process of this script (``--child``: one JSON line).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import gc
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import RESULTS, ROOT
from benchmarks.harness.children import child_json
from benchmarks.harness.progress import Progress, measured
from benchmarks.harness.report import Row, finish, fmt_int, md
from benchmarks.harness.stats import parse_callgrind, valgrind
from robotgate.compiled import compiled_modules

SCRIPT = Path(__file__).resolve()
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
SITE = "https://www.example.com"
SITEMAP_URL = f"{SITE}/sitemap.xml"
AGENT = "ExampleBot/1.0 (+https://example.org/bot)"
#: The issue's bars (66): instructions of a page's directives; memory of iterating a file.
DIRECTIVES_GOAL = 200_000
MEMORY_GOAL = 4 * 1024 * 1024


@dataclass
class Sizes:
    urls: int = 50_000
    index_files: int = 20
    before_src: Path | None = None
    after_src: Path | None = None  # this checkout's src/, copied when the run starts
    only: tuple[str, ...] = ("directives", "sitemap", "memory", "index")
    parsers: tuple[str, ...] = ("robotgate", "robotgate-stream", "scrapy", "usp")


# -- inputs ---------------------------------------------------------------------------


def html_page(head_bytes: int = 6 * 1024, total_bytes: int = 100 * 1024) -> bytes:
    """A page as sites write them: a head of metas, links, styles and scripts around a robots
    meta tag, then a body of articles and links."""
    metas = [
        '<meta charset="utf-8">',
        '<meta http-equiv="X-UA-Compatible" content="IE=edge">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="description" content="Everything about widgets: reviews, prices, '
        'and how to choose the one you need, updated weekly by our editors.">',
        '<meta name="robots" content="noarchive, max-image-preview:large">',
        '<meta name="theme-color" content="#336699">',
        '<meta property="og:type" content="article">',
        '<meta property="og:title" content="The widget guide &amp; price list">',
        '<meta property="og:url" content="https://www.example.com/guides/widgets">',
        '<meta property="og:image" content="https://cdn.example.com/img/widgets-1200.jpg">',
        '<meta name="twitter:card" content="summary_large_image">',
        '<meta name="twitter:site" content="@example">',
        '<meta name="generator" content="ExampleCMS 5.2">',
    ]
    links = [
        '<link rel="canonical" href="https://www.example.com/guides/widgets">',
        '<link rel="icon" href="/favicon.ico" sizes="any">',
        '<link rel="apple-touch-icon" href="/apple-touch-icon.png">',
        '<link rel="preconnect" href="https://cdn.example.com" crossorigin>',
        '<link rel="stylesheet" href="/assets/site.4f3a9c.css" media="all">',
        '<link rel="alternate" type="application/rss+xml" title="Feed" href="/feed.xml">',
        '<link rel="preload" as="font" type="font/woff2" href="/f/inter.woff2" crossorigin>',
    ]
    style = "<style>" + "".join(f".c{i}{{margin:{i}px 0;color:#{i:03x}}}" for i in range(40)) \
        + "</style>"
    scripts = [
        '<script type="application/ld+json">{"@context":"https://schema.org","@type":"Article",'
        '"headline":"The widget guide","author":{"@type":"Person","name":"A. Writer"},'
        '"datePublished":"2024-05-01","image":["https://cdn.example.com/img/w.jpg"]}</script>',
        '<script async src="https://www.googletagmanager.com/gtag/js?id=G-XXXX"></script>',
        "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push("
        "arguments);}gtag('js',new Date());gtag('config','G-XXXX');"
        "if (a < b && c > d) { console.log('<meta name=robots content=noindex>'); }</script>",
    ]
    head = ["<!DOCTYPE html>", '<html lang="en">', "<head>", *metas[:3],
            "<title>The widget guide &amp; price list | Example</title>", *metas[3:], *links,
            "<!-- analytics: <meta name=robots content=none> is not read here -->", *scripts,
            style]
    text = "\n  ".join(head)
    # The rest of the head as most are: inline code (a site's settings, a consent banner).
    settings = []
    while len(text) + len(",".join(settings)) < head_bytes - 100:
        n = len(settings)
        settings.append(f'"feature_{n}":{{"enabled":{str(n % 2 == 0).lower()},'
                        f'"rollout":{n * 7 % 100},"label":"Feature number {n}"}}')
    text += "\n  <script>window.__SETTINGS__={" + ",".join(settings) + "};</script>"
    text += "\n</head>\n<body>\n"
    body = []
    size = len(text)
    i = 0
    while size < total_bytes - 20:
        block = (f'<article class="c{i % 40}"><h2><a href="/guides/widget-{i}.html">Widget {i}'
                 f'</a></h2><p>Widget {i} is one of the widgets we tried this month; it costs '
                 f'{i % 97} euros, lasts {i % 13} years and comes in {i % 7} colours. '
                 f'<a href="/reviews/{i}">Read the review</a>.</p></article>\n')
        body.append(block)
        size += len(block)
        i += 1
    return (text + "".join(body) + "</body>\n</html>\n").encode()[:total_bytes]


def page_headers() -> Any:
    from multidict import CIMultiDict

    return CIMultiDict([
        ("Content-Type", "text/html; charset=utf-8"), ("Content-Length", "102400"),
        ("Date", "Thu, 26 Nov 2026 07:00:00 GMT"), ("Server", "nginx"),
        ("Cache-Control", "max-age=600"), ("ETag", '"5f3a-1c"'), ("Vary", "Accept-Encoding"),
        ("X-Frame-Options", "SAMEORIGIN"), ("Content-Encoding", "gzip"),
    ])


def urlset_body(n: int, start: int = 0, prefix: str = "") -> Iterator[bytes]:
    """A pretty-printed urlset of ``n`` URLs (about 220 bytes each), in pieces."""
    yield (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">\n').encode()
    batch = []
    for i in range(start, start + n):
        batch.append(
            f"  <url>\n    <loc>{SITE}/catalog{prefix}/category-{i % 500:03d}/"
            f"item-{i:07d}-a-descriptive-product-slug.html</loc>\n"
            f"    <lastmod>2024-{1 + i % 12:02d}-{1 + i % 28:02d}T12:30:00+00:00</lastmod>\n"
            f"    <changefreq>weekly</changefreq>\n    <priority>0.{i % 10}</priority>\n"
            "  </url>\n")
        if len(batch) == 256:
            yield "".join(batch).encode()
            batch = []
    yield ("".join(batch) + "</urlset>\n").encode()


def index_body(files: int) -> bytes:
    items = "".join(f"  <sitemap><loc>{SITE}/sitemaps/part-{i}.xml</loc>"
                    f"<lastmod>2024-05-01</lastmod></sitemap>\n" for i in range(files))
    return f'<?xml version="1.0"?>\n<sitemapindex xmlns="{NS}">\n{items}</sitemapindex>\n'.encode()


def write_urlset(path: Path, n: int) -> int:
    with open(path, "wb") as f:
        for piece in urlset_body(n):
            f.write(piece)
    return path.stat().st_size


def pieces_of(path: Path, size: int = 1 << 16) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while piece := f.read(size):
            yield piece


# -- children -------------------------------------------------------------------------


def directives_child(loops: int) -> dict[str, Any]:
    from robotgate import page_directives

    page = html_page()
    headers = page_headers()
    found = None
    for _ in range(loops):
        found = page_directives(headers, page, agent=AGENT, content_type="text/html; charset=utf-8")
    head_end = page.index(b"</head>")
    return {"calls": loops, "page_bytes": len(page), "head_bytes": head_end,
            "flags": list(found.flags()) if found is not None else None}


def _robotgate_entries(path: Path) -> Iterator[Any]:
    """The file's entries as robotgate hands them out: as each piece is read where the
    parser can (``take``), else once it has read the file."""
    from robotgate.robots.sitemap import SitemapParser

    parser = SitemapParser(SITEMAP_URL)
    take = getattr(parser, "take", None)
    for piece in pieces_of(path):
        going = parser.feed(piece)
        if take is not None:
            yield from take()
        if not going:
            break
    yield from parser.close().entries


def _usp_parse(url: str, body: bytes) -> Any:
    from usp.fetch_parse import XMLSitemapParser
    from usp.web_client.requests_client import RequestsWebClient

    return XMLSitemapParser(url, body.decode("utf-8"), 0, RequestsWebClient(), set()).sitemap()


def sitemap_child(which: str, path: Path, parse: bool) -> dict[str, Any]:
    """Read the file (and import the parser); parse it when ``parse``: the entries seen."""
    body = path.read_bytes()
    n = 0
    if which == "robotgate":
        from robotgate.robots.sitemap import parse_sitemap

        if parse:
            n = len(parse_sitemap(SITEMAP_URL, body).entries)
    elif which == "robotgate-stream":
        from robotgate.robots import sitemap  # noqa: F401  (imported in both runs)

        if parse:
            n = sum(1 for _ in _robotgate_entries(path))
    elif which == "scrapy":
        from scrapy.utils.sitemap import Sitemap

        if parse:
            n = sum(1 for _ in Sitemap(body))
    elif which == "usp":
        import usp.fetch_parse  # noqa: F401

        if parse:
            n = sum(1 for _ in _usp_parse(SITEMAP_URL, body).all_pages())
    return {"entries": n}


def memory_child(which: str, path: Path) -> dict[str, Any]:
    """tracemalloc's peak while iterating the file's entries, keeping none."""
    import tracemalloc

    body = b""
    if which in ("scrapy", "usp"):
        body = path.read_bytes()  # these take the body whole: it is not counted
        if which == "scrapy":
            from scrapy.utils.sitemap import Sitemap
        else:
            import usp.fetch_parse  # noqa: F401
    else:
        from robotgate.robots import sitemap  # noqa: F401
    gc.collect()
    n = 0
    tracemalloc.start()
    if which == "robotgate":
        for _ in _robotgate_entries(path):
            n += 1
    elif which == "scrapy":
        for _ in Sitemap(body):
            n += 1
    elif which == "usp":
        for _ in _usp_parse(SITEMAP_URL, body).all_pages():
            n += 1
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"entries": n, "peak": peak}


class _MemoryBody:
    def __init__(self, pieces: Iterator[bytes]) -> None:
        self.status = 200
        self._pieces = pieces
        self._rest = b""

    async def read(self, n: int) -> bytes:
        while len(self._rest) < n:
            piece = next(self._pieces, b"")
            if not piece:
                break
            self._rest += piece
        out, self._rest = self._rest[:n], self._rest[n:]
        await asyncio.sleep(0)  # an answer arrives over time: the loop turns
        return out


class _MemoryTransport:
    """Sitemaps served from memory: the index, and its files generated as they are read."""

    def __init__(self, files: int, per_file: int) -> None:
        self.files = files
        self.per_file = per_file
        self.requests = 0

    def body(self, url: str) -> Iterator[bytes]:
        if url.endswith("/sitemap_index.xml"):
            return iter([index_body(self.files)])
        part = int(url.rsplit("-", 1)[1].split(".")[0])
        return urlset_body(self.per_file, part * self.per_file, f"/p{part}")

    @contextlib.asynccontextmanager
    async def open(self, url: str, timeout: float,
                   pointed_by: str | None = None) -> AsyncIterator[_MemoryBody]:
        self.requests += 1
        yield _MemoryBody(self.body(url))


def _rss_now() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _rss_peak() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def index_child(walks: int, files: int, per_file: int) -> dict[str, Any]:
    """The peak resident memory gained while ``walks`` walks go over the index at once,
    keeping nothing; the most entries the reader held for other walks."""
    from robotgate.politeness.sitemaps import SitemapReader

    transport = _MemoryTransport(files, per_file)

    async def named(origin: str) -> Sequence[str]:
        return [f"{origin}/sitemap_index.xml"]

    held = [0 if hasattr(SitemapReader, "held_entries") else -1]

    async def walk(reader: SitemapReader) -> int:
        n = 0
        async for _ in reader.walk(SITE, max_depth=1):
            n += 1
            if n % 1000 == 0:  # the count the tree has (an older tree has none)
                held[0] = max(held[0], getattr(reader, "held_entries", -1))  # -1: not counted
        return n

    async def main() -> list[int]:
        reader = SitemapReader(transport, named)  # type: ignore[arg-type]
        return list(await asyncio.gather(*(walk(reader) for _ in range(walks))))

    gc.collect()
    before = _rss_now()
    started = time.process_time()
    counts = asyncio.run(main())
    cpu = time.process_time() - started
    return {"entries": counts, "peak": _rss_peak() - before, "requests": transport.requests,
            "cpu_s": cpu, "held_entries_max": held[0]}


def usp_index_child(files: int, per_file: int) -> dict[str, Any]:
    """usp's tree of the same site (its web client answering from memory), pages counted."""
    from usp.tree import sitemap_tree_for_homepage
    from usp.web_client.abstract_client import (
        AbstractWebClient,
        AbstractWebClientSuccessResponse,
        WebClientErrorResponse,
    )

    transport = _MemoryTransport(files, per_file)

    class Response(AbstractWebClientSuccessResponse):
        def __init__(self, data: bytes, url: str) -> None:
            self._data = data
            self._url = url

        def status_code(self) -> int:
            return 200

        def status_message(self) -> str:
            return "OK"

        def header(self, case_insensitive_name: str) -> str | None:
            return None

        def raw_data(self) -> bytes:
            return self._data

        def url(self) -> str:
            return self._url

    class Client(AbstractWebClient):
        def set_max_response_data_length(self, max_response_data_length: int | None) -> None:
            pass

        def get(self, url: str) -> Any:
            if url.endswith("/robots.txt"):
                return Response(f"User-agent: *\nSitemap: {SITE}/sitemap_index.xml\n".encode(),
                                url)
            if "/sitemaps/" in url or url.endswith("/sitemap_index.xml"):
                return Response(b"".join(transport.body(url)), url)
            return WebClientErrorResponse("not found", retryable=False)

    gc.collect()
    before = _rss_now()
    started = time.process_time()
    tree = sitemap_tree_for_homepage(SITE + "/", web_client=Client(), use_known_paths=False)
    n = sum(1 for _ in tree.all_pages())
    cpu = time.process_time() - started
    return {"entries": n, "peak": _rss_peak() - before, "cpu_s": cpu}


# -- the runs -------------------------------------------------------------------------


def _trees(sizes: Sizes) -> list[tuple[str, Path | None]]:
    trees: list[tuple[str, Path | None]] = [("after", sizes.after_src)]
    if sizes.before_src is not None:
        trees.append(("before", sizes.before_src))
    return trees


async def _instructions(args: Sequence[str], src: Path | None, cg_file: Path) -> dict[str, Any]:
    child = await child_json(SCRIPT, ["--child", *args], 3600, src, wrap=valgrind(cg_file))
    if "error" in child:
        return child
    child["instructions"] = parse_callgrind(cg_file)["instructions"]
    cg_file.unlink(missing_ok=True)
    return child


async def directives(sizes: Sizes, progress: Progress, cg_file: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, src in _trees(sizes):
        got = []
        for loops in (10, 410):
            progress.start(f"directives: callgrind {label}, {loops} calls")
            got.append(await _instructions(["directives", "--loops", str(loops)], src, cg_file))
        if any("error" in g for g in got):
            out[label] = {"error": next(g["error"] for g in got if "error" in g)}
            continue
        out[label] = {"per_call": (got[1]["instructions"] - got[0]["instructions"]) / 400,
                      "flags": got[1]["flags"], "page_bytes": got[1]["page_bytes"],
                      "head_bytes": got[1]["head_bytes"]}
    return out


async def sitemap(sizes: Sizes, progress: Progress, path: Path, cg_file: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    # The tree before has no take(): its entries come at the end, as parse_sitemap's do.
    runs = [(f"{name} ({label})", name, src) for label, src in _trees(sizes)
            for name in (("robotgate", "robotgate-stream") if label == "after" else ("robotgate",))]
    runs += [("scrapy", "scrapy", None), ("usp", "usp", None)]
    runs = [run for run in runs if run[1] in sizes.parsers]
    for key, which, src in runs:
        got = []
        for parse in (False, True):
            progress.start(f"sitemap: callgrind {key}{'' if parse else ', reading only'}")
            args = ["sitemap", "--which", which, "--file", str(path)]
            got.append(await _instructions([*args, "--parse"] if parse else args, src, cg_file))
        if any("error" in g for g in got):
            out[key] = {"error": next(g["error"] for g in got if "error" in g)}
            continue
        out[key] = {"instructions": got[1]["instructions"] - got[0]["instructions"],
                    "entries": got[1]["entries"]}
    return out


async def memory(sizes: Sizes, progress: Progress, path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    runs = [(f"robotgate ({label})", "robotgate", src) for label, src in _trees(sizes)]
    runs += [("scrapy", "scrapy", None), ("usp", "usp", None)]
    for key, which, src in runs:
        progress.start(f"memory: {key}")
        out[key] = await child_json(SCRIPT, ["--child", "memory", "--which", which, "--file",
                                             str(path)], 1800, src)
    return out


async def index(sizes: Sizes, progress: Progress) -> dict[str, Any]:
    out: dict[str, Any] = {}
    size = ["--files", str(sizes.index_files), "--urls", str(sizes.urls)]
    for label, src in _trees(sizes):
        for walks in (1, 2):
            progress.start(f"index: {label}, {walks} walk(s)")
            out[f"robotgate, {walks} walk{'s' if walks > 1 else ''} ({label})"] = await child_json(
                SCRIPT, ["--child", "index", "--walks", str(walks), *size], 3600, src)
    progress.start("index: usp")
    out["usp"] = await child_json(SCRIPT, ["--child", "usp-index", *size], 3600, None)
    return out


async def run(sizes: Sizes, progress: Progress) -> dict[str, Any]:
    async def measure() -> dict[str, Any]:
        results: dict[str, Any] = {}
        workdir = Path(tempfile.mkdtemp(prefix="robotgate-pages-"))
        # The children import a copy of src/ made now, compiled once before they run: an
        # edit meanwhile (or a module compiled in one child and not the other) moves no count.
        after = workdir / "src"
        shutil.copytree(ROOT / "src", after, ignore=shutil.ignore_patterns("__pycache__"))
        if not compiled_modules():
            sizes.after_src = after
        for label, src in _trees(sizes):
            progress.start(f"compiling {label}")
            await child_json(SCRIPT, ["--child", "directives", "--loops", "1"], 600, src)
        try:
            path = workdir / "urlset.xml"
            results["urlset_bytes"] = write_urlset(path, sizes.urls)
            cg_file = workdir / "callgrind.out"
            has_valgrind = shutil.which("valgrind") is not None
            if "directives" in sizes.only:
                results["directives"] = (await directives(sizes, progress, cg_file)
                                         if has_valgrind else {"error": "no valgrind"})
            if "sitemap" in sizes.only:
                results["sitemap"] = (await sitemap(sizes, progress, path, cg_file)
                                      if has_valgrind else {"error": "no valgrind"})
            if "memory" in sizes.only:
                results["memory"] = await memory(sizes, progress, path)
            if "index" in sizes.only:
                results["index"] = await index(sizes, progress)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return results

    return await measured(progress, {k: str(v) if isinstance(v, Path) else v
                                     for k, v in dataclasses.asdict(sizes).items()}, measure)


# -- the report -----------------------------------------------------------------------


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def table_rows(report: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    d = report.get("directives", {})
    for label in ("after", "before"):
        t = d.get(label)
        if t is None:
            continue
        if "error" in t:
            rows.append({"figure": f"page_directives ({label})",
                         "values": {"robotgate": t["error"][:30]}, "goal": "", "pass": False})
            continue
        rows.append({"figure": f"page_directives, instructions/call ({label})",
                     "values": {"robotgate": fmt_int(t["per_call"])},
                     "goal": f"<= {DIRECTIVES_GOAL:,}",
                     "pass": t["per_call"] <= DIRECTIVES_GOAL if label == "after" else None})
    s = report.get("sitemap", {})
    scrapy = s.get("scrapy", {}).get("instructions")
    for key, t in s.items():
        if "error" in t:
            rows.append({"figure": f"sitemap {key}", "values": {"robotgate": t["error"][:30]},
                         "goal": "", "pass": False})
            continue
        ratio = t["instructions"] / scrapy if scrapy else None
        after = key.startswith("robotgate") and key.endswith("(after)")
        rows.append({"figure": f"sitemap parse, instructions: {key}",
                     "values": {"robotgate": fmt_int(t["instructions"]),
                                "scrapy": f"{ratio:.2f}x" if ratio else "-"},
                     "goal": "<= 1.0x Scrapy" if after else "",
                     "pass": (ratio is not None and ratio <= 1.0) if after else None})
    m = report.get("memory", {})
    for key, t in m.items():
        if "error" in t:
            continue
        after = key == "robotgate (after)"
        rows.append({"figure": f"iterating the urlset, peak: {key}",
                     "values": {"robotgate": _mb(t["peak"])},
                     "goal": "<= 4 MiB" if after else "",
                     "pass": t["peak"] <= MEMORY_GOAL if after else None})
    i = report.get("index", {})
    for key, t in i.items():
        if "error" in t:
            continue
        rows.append({"figure": f"walking the index, peak: {key}",
                     "values": {"robotgate": _mb(t["peak"])}, "goal": "", "pass": None})
    return rows


def render_details(report: dict[str, Any]) -> str:
    out: list[str] = []
    d = report.get("directives", {})
    if "after" in d and "error" not in d["after"]:
        a = d["after"]
        out.append(f"\npage_directives: a {a['page_bytes']:,}-byte page, head {a['head_bytes']:,}"
                   f" bytes, flags {a['flags']}")
        out += md(["tree", "instructions/call"],
                  [[k, fmt_int(v["per_call"])] for k, v in d.items() if "per_call" in v])
    s = report.get("sitemap", {})
    if s:
        out.append(f"\nsitemap: {report['urlset_bytes']:,} bytes, instructions per parse")
        scrapy = s.get("scrapy", {}).get("instructions")
        out += md(["parser", "instructions", "entries", "/ Scrapy"],
                  [[k, fmt_int(v["instructions"]), fmt_int(v["entries"]),
                    f"{v['instructions'] / scrapy:.2f}x" if scrapy else "-"]
                   for k, v in s.items() if "instructions" in v])
    m = report.get("memory", {})
    if m:
        out.append("\niterating the urlset's entries, keeping none (tracemalloc peak)")
        out += md(["parser", "peak", "entries"],
                  [[k, _mb(v["peak"]), fmt_int(v["entries"])] for k, v in m.items()
                   if "peak" in v])
    i = report.get("index", {})
    if i:
        out.append("\nwalking the index, keeping no entry (peak resident memory gained)")
        out += md(["walker", "peak", "entries", "CPU s", "held for other walks, most"],
                  [[k, _mb(v["peak"]), str(v["entries"]), f"{v['cpu_s']:.1f}",
                    str(v.get("held_entries_max", "-"))]
                   for k, v in i.items() if "peak" in v])
    errors = [f"{section} {k}: {v['error']}" for section in ("sitemap", "memory", "index")
              for k, v in report.get(section, {}).items() if isinstance(v, dict) and "error" in v]
    out += [f"\n{e}" for e in errors]
    return "\n".join(out)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--urls", type=int, default=Sizes.urls, help="URLs of the urlset")
    ap.add_argument("--files", type=int, default=Sizes.index_files,
                    help="sitemaps the index lists (each of --urls URLs)")
    ap.add_argument("--only", help="a comma-separated choice of directives,sitemap,memory,index")
    ap.add_argument("--parsers", help="with sitemap: a comma-separated choice of robotgate,"
                    "robotgate-stream,scrapy,usp")
    ap.add_argument("--before-src", type=Path,
                    help="another tree's src/: its figures beside this one's")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--json", type=Path, default=RESULTS / "pages.json")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--loops", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--which", help=argparse.SUPPRESS)
    ap.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--parse", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--walks", type=int, default=1, help=argparse.SUPPRESS)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.child:
        if args.child == "directives":
            out = directives_child(args.loops)
        elif args.child == "sitemap":
            out = sitemap_child(args.which, args.file, args.parse)
        elif args.child == "memory":
            out = memory_child(args.which, args.file)
        elif args.child == "index":
            out = index_child(args.walks, args.files, args.urls)
        else:
            out = usp_index_child(args.files, args.urls)
        print(json.dumps(out))
        return 0
    sizes = Sizes(urls=args.urls, index_files=args.files,
                  before_src=args.before_src.resolve() if args.before_src else None)
    if args.only:
        sizes.only = tuple(args.only.split(","))
    if args.parsers:
        sizes.parsers = tuple(args.parsers.split(","))
    if args.quick:
        sizes = dataclasses.replace(sizes, urls=2000, index_files=3)
    os.environ["PYTHONHASHSEED"] = "0"  # the children's dicts and sets the same in each run
    report = asyncio.run(run(sizes, Progress(enabled=not args.no_progress)))
    return finish(report, table_rows(report), render_details(report), args.json, argv,
                  columns=("robotgate", "scrapy"))


if __name__ == "__main__":
    sys.exit(main())
