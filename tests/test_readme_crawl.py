"""The README's crawl example, as pasted, crawls a site of relative links to the end."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest

from tests.support.pages_site import Answer, PagesSite

README = Path(__file__).resolve().parent.parent / "README.md"


def _crawl_example() -> str:
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)
    (block,) = [b for b in blocks if "gate.crawl(" in b]
    return block


def _page(*hrefs: str) -> Answer:
    return Answer("<html><body>{}</body></html>".format(
        "".join(f'<a href="{h}">x</a>' for h in hrefs)))


SITE = {
    "/robots.txt": Answer("User-agent: *\nAllow: /\n", content_type="text/plain"),
    "/": _page("a.html", "/b", "./c?x=1", "sub/", "mailto:me@example.com"),
    "/a.html": _page("sub/deep.html"),
    "/b": _page("#top"),
    "/c?x=1": _page("/"),
    "/sub/": _page("../a.html", "deep.html"),
    "/sub/deep.html": _page("../b"),
}


def test_the_example_reads_links_with_page_links_not_a_regex() -> None:
    code = _crawl_example()
    assert "page_links(" in code and "re.findall" not in code


@pytest.mark.slow
async def test_the_readme_crawl_example_crawls_a_site_of_relative_links_to_the_end(
        tmp_path: Path) -> None:
    async with PagesSite(SITE) as site:
        code = _crawl_example()
        seeds = re.search(r"asyncio\.run\(main\((\[.*?\])\)\)", code)
        assert seeds is not None
        code = code.replace(seeds.group(1), repr([site.url("/")]))
        code = code.replace("delay=1.0", "delay=0.05")  # the example's pacing, shortened
        (tmp_path / "example.py").write_text(code, encoding="utf-8")
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-W", "error", "example.py", cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(child.communicate(), 60)
    assert child.returncode == 0, err.decode()
    pages = len(SITE) - 1
    assert out.decode().split() == [str(pages), "0", "0"]
    assert {path for path, n in site.hits.items() if n} == set(SITE)
    assert all(n == 1 for n in site.hits.values()), site.hits
