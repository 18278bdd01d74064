"""examples/spider.py and examples/crawl.py agree: neither follows the links of a page
that says nofollow, and neither imports robotgate's internals."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

import robotgate
from tests.support.pages_site import Answer, PagesSite

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"robotgate_example_agree_{name}",
                                                  EXAMPLES / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _page(*hrefs: str, meta: str = "", **kw: object) -> Answer:
    return Answer("<html><head>{}</head><body>{}</body></html>".format(
        meta, "".join(f'<a href="{h}">x</a>' for h in hrefs)), **kw)  # type: ignore[arg-type]


SITE = {
    "/robots.txt": Answer("User-agent: *\nAllow: /\n", content_type="text/plain"),
    "/": _page("meta-nofollow", "header-nofollow", "plain"),
    "/meta-nofollow": _page("from-meta", meta='<meta name="robots" content="nofollow">'),
    "/header-nofollow": _page("from-header", headers={"X-Robots-Tag": "nofollow"}),
    "/plain": _page("from-plain"),
    "/from-meta": _page(), "/from-header": _page(), "/from-plain": _page(),
}
FETCHED = {"/", "/meta-nofollow", "/header-nofollow", "/plain", "/from-plain"}


@pytest.mark.parametrize("example", ["spider.py", "crawl.py"])
async def test_neither_example_follows_the_links_of_a_nofollow_page(example: str) -> None:
    module = _load(example)
    async with PagesSite(SITE) as site:
        start = site.url("/")
        await module.main(start if example == "spider.py" else [start], delay=0)
    fetched = {path for path, n in site.hits.items() if n and path != "/robots.txt"}
    assert fetched == FETCHED


@pytest.mark.parametrize("example", ["spider.py", "crawl.py"])
def test_examples_import_only_robotgate_s_public_names(example: str) -> None:
    tree = ast.parse((EXAMPLES / example).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("robotgate"):
            assert node.module == "robotgate", node.module
            assert all(alias.name in robotgate.__all__ for alias in node.names)
        elif isinstance(node, ast.Import):
            assert not any(a.name.startswith("robotgate.") for a in node.names)
