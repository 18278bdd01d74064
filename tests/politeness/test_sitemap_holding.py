"""What the sitemap reader holds once entries are delivered (issue 66): a file's entries only
while another walk running still has that file to read; a walk holds the file it is
delivering, and lets it go before it reads the next.  Counted, not timed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from robotgate.politeness.sitemaps import SitemapReader
from tests.gate.test_sitemaps import index, urlset
from tests.politeness.test_sitemap_pointers import Body as WholeBody

ORIGIN = "http://shop.test"
FILES = 4
PER_FILE = 30


class Body(WholeBody):
    async def read(self, n: int) -> bytes:
        data = await super().read(n)
        await asyncio.sleep(0)  # an answer arrives over time: other walks run meanwhile
        return data


class Files:
    def __init__(self) -> None:
        parts = [f"{ORIGIN}/part-{i}.xml" for i in range(FILES)]
        self.files = {f"{ORIGIN}/index.xml": index(*parts)}
        for i, part in enumerate(parts):
            self.files[part] = urlset(*(f"{ORIGIN}/p{i}/{n}" for n in range(PER_FILE)))
        self.opened: list[str] = []

    @asynccontextmanager
    async def open(self, url: str, timeout: float,
                   pointed_by: str | None) -> AsyncIterator[Body]:
        self.opened.append(url)
        yield Body(self.files[url])


async def named(origin: str) -> Sequence[str]:
    return [f"{origin}/index.xml"]


def test_one_walk_holds_no_file_it_has_read() -> None:
    async def run() -> list[int]:
        reader = SitemapReader(Files(), named)
        held = []
        async for _ in reader.walk(ORIGIN):
            held.append(reader.held_entries)
        return held

    held = asyncio.run(run())
    assert len(held) == FILES * PER_FILE
    assert max(held) == 0  # nobody else reads them: the walk's own file only


def test_a_file_is_held_only_until_the_last_walk_needing_it_reads_it() -> None:
    async def run() -> tuple[list[int], list[int], int, list[str], int]:
        files = Files()
        reader = SitemapReader(files, named)
        ahead, behind = reader.walk(ORIGIN), reader.walk(ORIGIN)
        # Both read the index and take part-0's first entry at once.
        await asyncio.gather(ahead.__anext__(), behind.__anext__())
        held_ahead: list[int] = []
        # Then the first walk delivers the rest of part-0, part-1 and part-2.
        for _ in range(3 * PER_FILE - 1):
            await ahead.__anext__()
            held_ahead.append(reader.held_entries)
        held_behind: list[int] = []
        async for _ in behind:
            held_behind.append(reader.held_entries)
        rest = [entry async for entry in ahead]
        return held_ahead, held_behind, reader.held_entries, files.opened, len(rest)

    held_ahead, held_behind, at_end, opened, rest = asyncio.run(run())
    # Files the second walk still has to read are held for it (part-1 and part-2); the
    # index and part-0, which both walks have read, are not.
    assert held_ahead[PER_FILE - 2] == 0  # part-0 delivered by both: held by neither
    assert held_ahead[-1] == 2 * PER_FILE
    # The second walk takes them from the reader (one request each), letting each go as
    # it takes it; part-3, which it reads first, is held for the first walk in turn.
    assert held_behind == ([2 * PER_FILE] * (PER_FILE - 1) + [PER_FILE] * PER_FILE
                           + [0] * PER_FILE + [PER_FILE] * PER_FILE)
    assert at_end == 0 and rest == PER_FILE
    assert sorted(opened) == sorted(set(opened)) and len(opened) == 1 + FILES
