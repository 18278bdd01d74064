"""What reading a page's links costs: ``page_links`` beside the readers a crawler would pick.

    python benchmarks/page_links.py [--kb 100] [--loops 5] [--repeats 2] [--before COMMIT]
        [--readers re.findall,page_links,html.parser,...] [--no-callgrind]
        [--json benchmarks/results/page_links.json]

Callgrind instructions of one call on a page of ``--kb`` KB as sites write them (a header of
navigation links, articles with relative, root-relative, absolute, ``&amp;``-query,
``rel="nofollow"`` and ``../`` links, a footer with ``mailto:`` and ``javascript:``; about 340
links at 100 KB): a child making ``--loops`` + 1 calls less one making 1, over ``--loops``; the
fewest of ``--repeats`` runs.  Side by side in the same run:

* ``re.findall``: ``re.findall(rb'href="([^"]+)"', body)``, the regular expression a crawl would
  otherwise write (no resolving, no entities, comments and scripts read as markup);
* ``page_links`` of this checkout, and of ``--before`` (that commit's ``src/robotgate/links.py``
  loaded as a module of its own; its results must equal this checkout's);
* ``html.parser``: the standard library's ``HTMLParser`` collecting ``<a>``/``<area>`` hrefs
  (with ``<base href>``) and ``urljoin`` of each;
* ``lxml iterlinks``, Scrapy's ``LinkExtractor`` and ``parsel``, where installed.

Each measured run is a child process of this script (``--child``: one JSON line).
``--no-callgrind`` runs the children without valgrind: the links are compared, nothing counted.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import ROOT
from benchmarks.harness.report import command_line, machine, write_json
from benchmarks.harness.stats import parse_callgrind, valgrind

SCRIPT = Path(__file__).resolve()
PAGE_URL = "https://www.example.com/guides/widgets/page.html"
#: The commit whose links.py is "before" when none is given (page_links before issue 66's cut).
BEFORE = "6ea50c6"
READERS = ("re.findall", "page_links", "page_links before", "html.parser", "lxml iterlinks",
           "scrapy LinkExtractor", "parsel")


def links_page(total_bytes: int = 100 * 1024) -> bytes:
    """A page as sites write them, about 340 links at 100 KB."""
    nav = "".join(f'<li class="nav-item"><a class="nav-link" href="/category/{c}/">'
                  f"{c.title()}</a></li>"
                  for c in ("news", "reviews", "guides", "deals", "video", "podcasts", "about",
                            "contact"))
    head = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            "<title>Widgets &amp; more</title>"
            '<link rel="stylesheet" href="/assets/site.css"><script>var a = "<a href=/no>";'
            "</script><style>a{color:red}</style></head>\n"
            '<body><header><a href="/" class="logo">Home</a>'
            f'<nav><ul>{nav}</ul></nav><a href="#main">Skip</a></header>\n'
            '<!-- <a href="/old"> -->\n<main id="main">\n')
    text = ("Widgets come in many shapes and colours; we tried this one for a month "
            "and wrote down what we liked and what we did not. ") * 12
    tail = ('</main><footer><a href="mailto:editors@example.com">Write</a> '
            '<a href="javascript:void(0)">Top</a> <a href="/privacy">Privacy</a></footer>'
            "</body></html>\n")
    parts = [head]
    size = len(head) + len(tail)
    i = 0
    while True:
        block = (f'<article class="post"><h2><a href="/articles/2024/{i % 12 + 1:02d}/'
                 f'widget-{i}.html" class="title">Widget {i}</a></h2><p>{text}</p><p>'
                 f'<a href="widget-{i}.html#comments">Comments</a> · '
                 f'<a href="https://www.example.com/tag/t{i % 30}">Tag {i % 30}</a> · '
                 f'<a href="/search?q=widget+{i}&amp;sort=new&amp;page={i % 5}">Similar</a> · '
                 f'<a href="https://shop.partner.example/item/{i}?ref=ex" '
                 f'rel="nofollow sponsored" target="_blank">Buy</a> · '
                 f"<a href='../archive/{i}'>Archive</a></p></article>\n")
        if size + len(block) > total_bytes:
            break
        parts.append(block)
        size += len(block)
        i += 1
    page = ("".join(parts) + tail).encode()
    return page + b" " * (total_bytes - len(page))


# -- the readers ----------------------------------------------------------------------


def _before_module(commit: str, into: Path) -> Path:
    """``commit``'s links.py as a module file of its own (its package imports made absolute)."""
    source = subprocess.run(["git", "show", f"{commit}:src/robotgate/links.py"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    source = re.sub(r"^from \.(\w+) import", r"from robotgate.\1 import", source, flags=re.M)
    path = into / "links_before.py"
    path.write_text(source)
    return path


def _html_parser_links(body: bytes, base_url: str) -> list[str]:
    from html.parser import HTMLParser
    from urllib.parse import urljoin

    class Links(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.base: str | None = None
            self.hrefs: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag in ("a", "area", "base"):
                href = dict(attrs).get("href")
                if href is None:
                    return
                if tag != "base":
                    self.hrefs.append(href)
                elif self.base is None:
                    self.base = href

    parser = Links()
    parser.feed(body.decode("utf-8", "replace"))
    parser.close()
    base = urljoin(base_url, parser.base) if parser.base else base_url
    return list(dict.fromkeys(urljoin(base, href) for href in parser.hrefs))


def reader(name: str, before: Path | None) -> Callable[[bytes, str], Any]:
    """The reader ``name`` as ``read(body, base_url)``; imports done here, outside the loops."""
    if name == "re.findall":
        href = re.compile(rb'href="([^"]+)"')
        return lambda body, base: href.findall(body)
    if name == "page_links":
        from robotgate import page_links

        return page_links
    if name == "page_links before":
        assert before is not None
        spec = importlib.util.spec_from_file_location("links_before", before)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["links_before"] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
        return module.page_links  # type: ignore[no-any-return]
    if name == "html.parser":
        import html.parser  # noqa: F401

        return _html_parser_links
    if name == "lxml iterlinks":
        import lxml.html

        def lxml_links(body: bytes, base: str) -> list[str]:
            doc = lxml.html.document_fromstring(body, base_url=base)
            doc.make_links_absolute(base, resolve_base_href=True)
            return list(dict.fromkeys(
                link for el, attr, link, _ in doc.iterlinks()
                if attr == "href" and el.tag in ("a", "area")))

        return lxml_links
    if name == "scrapy LinkExtractor":
        from scrapy.http import HtmlResponse
        from scrapy.linkextractors import LinkExtractor

        extractor = LinkExtractor(tags=("a", "area"), attrs=("href",))
        return lambda body, base: [link.url for link in extractor.extract_links(
            HtmlResponse(url=base, body=body, encoding="utf-8"))]
    if name == "parsel":
        from urllib.parse import urljoin

        from parsel import Selector

        def parsel_links(body: bytes, base: str) -> list[str]:
            sel = Selector(body=body, encoding="utf-8", base_url=base)
            return list(dict.fromkeys(urljoin(base, h) for h in sel.xpath(
                "//a/@href | //area/@href").getall()))

        return parsel_links
    raise ValueError(name)


def installed(name: str) -> bool:
    module = {"lxml iterlinks": "lxml", "scrapy LinkExtractor": "scrapy",
              "parsel": "parsel"}.get(name)
    return module is None or importlib.util.find_spec(module) is not None


def child(name: str, loops: int, kb: int, before: Path | None) -> dict[str, Any]:
    body = links_page(kb * 1024)
    read = reader(name, before)
    found: Any = []
    for _ in range(loops):
        found = read(body, PAGE_URL)
    urls = [u.decode() if isinstance(u, bytes) else str(u) for u in found]
    return {"calls": loops, "links": len(urls), "urls": urls}


# -- the parent -----------------------------------------------------------------------


def _run_child(name: str, loops: int, kb: int, before: Path | None, cg_file: Path | None
               ) -> dict[str, Any]:
    args = [sys.executable, str(SCRIPT), "--child", name, "--loops", str(loops), "--kb", str(kb)]
    if before is not None:
        args += ["--before-file", str(before)]
    wrap = valgrind(cg_file) if cg_file is not None else []
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run([*wrap, *args], capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if not ln.startswith("==")]
        return {"error": lines[-3:] or [f"exit {done.returncode}"]}
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if cg_file is not None:
        out["instructions"] = parse_callgrind(cg_file)["instructions"]
    return out


def measure(names: Sequence[str], loops: int, kb: int, repeats: int, before: Path | None,
            workdir: Path, progress: bool, callgrind: bool = True) -> dict[str, Any]:
    """Instructions per call of each reader: the fewest of ``repeats`` runs of (loops + 1 calls
    less 1 call) / loops, the runs interleaved."""
    per_call: dict[str, list[float]] = {n: [] for n in names}
    found: dict[str, dict[str, Any]] = {}
    for r in range(repeats):
        for name in names:
            counts = []
            for n in (1, loops + 1):
                if progress:
                    print(f"\r{name}: run {r + 1}/{repeats}, {n} call(s)".ljust(60), end="",
                          file=sys.stderr, flush=True)
                cg_file = workdir / f"cg.{len(found)}.{n}" if callgrind else None
                out = _run_child(name, n, kb, before, cg_file)
                if "error" in out:
                    raise SystemExit(f"{name}: {out['error']}")
                counts.append(out.get("instructions", 0))
                found[name] = out
            per_call[name].append((counts[1] - counts[0]) / loops)
    if progress:
        print("\r".ljust(61), end="\r", file=sys.stderr)
    return {n: {"instructions": min(per_call[n]), "runs": per_call[n],
                "links": found[n]["links"], "urls": found[n]["urls"]} for n in names}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--kb", type=int, default=100, help="page size in KB")
    ap.add_argument("--loops", type=int, default=5, help="calls measured per run")
    ap.add_argument("--repeats", type=int, default=2, help="runs per reader (the fewest counts)")
    ap.add_argument("--before", default=BEFORE, help="the commit whose page_links is 'before'")
    ap.add_argument("--readers", default=",".join(READERS),
                    help="which readers, comma-separated (re.findall and both page_links always)")
    ap.add_argument("--no-callgrind", action="store_true",
                    help="compare the links only (no valgrind, no counts)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--child", choices=READERS, help=argparse.SUPPRESS)
    ap.add_argument("--before-file", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.loops, args.kb, args.before_file)))
        return 0
    callgrind = not args.no_callgrind
    if callgrind and shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: these figures are callgrind's counts")
    began = time.monotonic()
    asked = {"re.findall", "page_links", "page_links before", *args.readers.split(",")}
    names = [n for n in READERS if n in asked and installed(n)]
    with tempfile.TemporaryDirectory() as tmp:
        before = _before_module(args.before, Path(tmp))
        readers = measure(names, args.loops, args.kb, args.repeats, before, Path(tmp),
                          not args.no_progress, callgrind)
    page = links_page(args.kb * 1024)
    baseline = readers["re.findall"]["instructions"] or 1  # 0: not counted
    same = readers["page_links"]["urls"] == readers["page_links before"]["urls"]
    report = {
        "page_bytes": len(page), "hrefs": len(re.findall(rb"<a(?:rea)? [^>]*href", page)),
        "loops": args.loops, "repeats": args.repeats, "before": args.before,
        "same_links_as_before": same, "machine": machine(), "command": command_line(argv),
        "seconds": time.monotonic() - began,
        "readers": {n: {k: v for k, v in r.items() if k != "urls"} for n, r in readers.items()},
    }
    print(f"page_links on a {len(page) / 1024:.0f} KB page with {report['hrefs']} a/area hrefs, "
          f"callgrind instructions per call (fewest of {args.repeats} runs of {args.loops} calls)")
    print(f"{'reader':22} {'instructions':>13} {'x re.findall':>13} {'links out':>10}")
    for name, r in readers.items():
        print(f"{name:22} {r['instructions']:13,.0f} {r['instructions'] / baseline:13.1f} "
              f"{r['links']:10}")
    missing = [n for n in READERS if n in asked and n not in readers]
    if missing:
        print("not installed: " + ", ".join(missing))
    print(f"page_links after == before ({args.before}): {same}")
    print(f"\n{report['command']}\n({report['seconds']:.0f} s; JSON: {args.json})")
    if args.json is not None:
        write_json(args.json, report)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
