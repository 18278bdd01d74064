"""A sitemap read for several walks (politeness.sitemaps.SitemapReader) is kept only while a
walk running still has it to read: its entries live in the walks reading them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence

from robotgate.politeness.sitemaps import SitemapReader, Sitemaps

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
SITE = "https://example.com"


class _Body:
    def __init__(self, data: bytes) -> None:
        self.status = 200
        self._data = data

    async def read(self, n: int) -> bytes:
        out, self._data = self._data[:n], self._data[n:]
        await asyncio.sleep(0)
        return out


class _Transport:
    """An index of two sitemaps, three URLs each, served from memory; requests counted."""

    def __init__(self) -> None:
        self.requests: list[str] = []

    @contextlib.asynccontextmanager
    async def open(self, url: str, timeout: float,
                   pointed_by: str | None = None) -> AsyncIterator[_Body]:
        self.requests.append(url)
        if url.endswith("/index.xml"):
            items = "".join(f"<sitemap><loc>{SITE}/s{i}.xml</loc></sitemap>" for i in (1, 2))
            yield _Body(f'<sitemapindex xmlns="{NS}">{items}</sitemapindex>'.encode())
            return
        part = url.rsplit("/s", 1)[1].split(".")[0]
        items = "".join(f"<url><loc>{SITE}/p{part}/{i}</loc></url>" for i in range(3))
        yield _Body(f'<urlset xmlns="{NS}">{items}</urlset>'.encode())


async def _named(origin: str) -> Sequence[str]:
    return [f"{origin}/index.xml"]


async def test_a_file_read_is_let_go_once_no_walk_running_has_it_to_read() -> None:
    transport = _Transport()
    reader = SitemapReader(transport, _named)  # type: ignore[arg-type]
    first, second = reader.walk(SITE), reader.walk(SITE)
    # Both walks at once: each file is fetched once for the two.
    async def urls(walk: Sitemaps) -> list[str]:
        return [e.url async for e in walk]

    got = await asyncio.gather(urls(first), urls(second))
    assert got[0] == got[1] and len(got[0]) == 6
    assert sorted(transport.requests) == sorted({*transport.requests})  # none twice
    # One walk alone keeps nothing it has read: a file is gone once the walk has it.
    lone = reader.walk(SITE)
    seen = [(await anext(lone)).url for _ in range(4)]  # into the second file
    assert seen[3] == f"{SITE}/p2/0"
    assert [key[0] for key in reader._files] == []
    assert len([e async for e in lone]) == 2
