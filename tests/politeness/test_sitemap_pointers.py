"""Each sitemap a walk opens says which page pointed to it: the sitemaps robots.txt
names, an index's sitemaps, never the origin's own /sitemap.xml (the caller's input).
So the pointer rule applies to each without code of its own (docs/bad-input.md)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from robotgate.politeness.sitemaps import SitemapReader
from tests.gate.test_sitemaps import index, urlset

ORIGIN = "http://shop.test"


class Body:
    def __init__(self, data: bytes) -> None:
        self.status = 200
        self._data = data

    async def read(self, n: int) -> bytes:
        data, self._data = self._data[:n], self._data[n:]
        return data


class Files:
    """A transport serving ``files`` (URL -> body) and noting each open's pointer."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.opened: list[tuple[str, str | None]] = []

    @asynccontextmanager
    async def open(self, url: str, timeout: float,
                   pointed_by: str | None) -> AsyncIterator[Body]:
        self.opened.append((url, pointed_by))
        yield Body(self.files.get(url, b""))


def walk(files: Files, named: Sequence[str]) -> list[str]:
    async def names(origin: str) -> Sequence[str]:
        return named

    async def run() -> list[str]:
        reader = SitemapReader(files, names)
        return [entry.url async for entry in reader.walk(ORIGIN)]

    return asyncio.run(run())


def test_named_sitemaps_and_an_indexs_sitemaps_are_opened_as_pointers() -> None:
    files = Files({f"{ORIGIN}/index.xml": index(f"{ORIGIN}/a.xml"),
                   f"{ORIGIN}/a.xml": urlset(f"{ORIGIN}/page")})
    assert walk(files, [f"{ORIGIN}/index.xml"]) == [f"{ORIGIN}/page"]
    assert files.opened == [(f"{ORIGIN}/index.xml", f"{ORIGIN}/robots.txt"),
                            (f"{ORIGIN}/a.xml", f"{ORIGIN}/index.xml")]


def test_the_origins_own_sitemap_xml_is_the_callers_input() -> None:
    files = Files({f"{ORIGIN}/sitemap.xml": urlset(f"{ORIGIN}/page")})
    assert walk(files, []) == [f"{ORIGIN}/page"]
    assert files.opened == [(f"{ORIGIN}/sitemap.xml", None)]
