"""The links a page gives: which join the crawl, and the page each is a pointer of.

A link joins when it is a URL, within ``max_depth``, inside the crawl's ``scope``
(``"host"``, ``"domain"``, ``"any"`` or a rule) and not a private address that a
public page points to (no DNS: literal addresses and ``localhost``); the rest are
counted in the summary.  A page's links are read up to ``max_links``.  A link or a
sitemap's entry is its page's pointer (docs/bad-input.md): its entry carries that
page as its :class:`~robotgate.policy.provenance.Provenance`, kept by the crawl's
state, so its robots.txt verdict is asked and its page fetched ``pointed_by`` that
page (where the fetch takes it) in the run that found it, a resumed run and another
worker alike.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import Callable, Iterable

from ..policy.hops import IsPrivate, literal_address
from ..policy.provenance import Provenance
from ..politeness.grouping import registrable_domain
from ..store.base import StoreError
from ..store.crawl_state import Added, CrawlState, Entry
from ..urls import InvalidURL, redact, resource_key
from .options import ScopeRule
from .page import count_links
from .results import CrawlSummary

__all__ = ["Discovery", "digest_key"]

#: A page's links handed to the state at once while they are read.
_CHUNK = 4096
#: A page's links judged between two turns of the loop: each costs its key and host
#: (tens of microseconds of pure Python), so a turn stays within a few tens of
#: milliseconds, under load too.
LINKS_A_TURN = 1024
#: Bytes of a key's digest an unnamed crawl remembers: 120 bits, 20 characters of
#: base64 (a 64-byte string object, as small as a 16-character one).  Two of a
#: billion keys share one with a chance of about 4e-19.
_DIGEST_BYTES = 15


def digest_key(key: str) -> str:
    """``key`` as an unnamed crawl remembers it: its BLAKE2b digest, fixed in size
    whatever the URL's length (the crawl's state keeps nothing else of a URL done).

    >>> len(digest_key("http://example.com/" + "a" * 2000))
    20
    """
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"),
                             digest_size=_DIGEST_BYTES).digest()
    return base64.b64encode(digest).decode("ascii")


class Discovery:
    """Judges the links pages give, for one crawl (its frontier alone calls it).

    ``invalid(url, error, discovered)`` records what is no URL; ``counted(added,
    links)`` counts links written to the state.  ``keeps_pointers``: the fetch takes
    ``pointed_by``, so each link is asked as its page's pointer.  ``digests``: the
    state knows each URL by its key's digest (:func:`digest_key`: an unnamed crawl's
    memory, where no key is read back), not by the key itself."""

    def __init__(self, state: CrawlState, summary: CrawlSummary, *,
                 url_key: Callable[[str], str], scope: str | ScopeRule,
                 max_depth: int | None, max_links: int, is_private: IsPrivate,
                 keeps_pointers: bool,
                 invalid: Callable[[object, BaseException, bool], None],
                 counted: Callable[[Added, int], None], digests: bool = False) -> None:
        self.state = state
        self.summary = summary
        self.url_key = url_key
        self.scope = scope
        self.max_depth = max_depth
        self.max_links = max_links
        self.is_private = is_private
        self.invalid = invalid
        self.counted = counted
        self.keeps_pointers = keeps_pointers
        self.digests = digests

    async def judge(self, page: Entry, links: Iterable[str],
                    resolve: Callable[[str], str | None] | None = None,
                    final_url: str | None = None) -> list[Entry]:
        """The links of ``page`` that may be crawled, as entries (the rest counted).

        ``final_url``: where the page's answer came from after redirects (default its
        URL): the page whose links they are, judged public or private by its host.
        A page of many links hands them to the state a chunk at a time as they are
        read; the last chunk is returned, to be written with the page's outcome."""
        summary = self.summary
        depth = page.depth + 1
        if self.max_depth is not None and depth > self.max_depth:
            n = count_links(links, self.max_links)
            summary.links += n
            summary.too_deep += n
            return []
        out: list[Entry] = []
        page_host = _host(resource_key(page.url))
        source = final_url or page.url
        source_host = page_host if source == page.url else _host(resource_key(source))
        page_private = self._private(source_host)
        # A literal private address is known private; a name is looked up where each
        # link is asked, as it is in the run that found it.
        pointer = Provenance(source, False if page_private else None)
        scope = self.scope
        read = 0
        try:
            for link in links:
                if read >= self.max_links:
                    summary.links_cut += 1
                    break
                read += 1
                if read % LINKS_A_TURN == 0:
                    await asyncio.sleep(0)  # a million links must not hold the loop
                if len(out) >= _CHUNK:
                    await self._add_links(out)
                    out = []
                if (resolve is not None and isinstance(link, str)
                        and link[:7] != "http://" and link[:8] != "https://"):
                    resolved = resolve(link)  # relative, or another scheme
                    if resolved is None or not resolved[:8].lower().startswith(
                            ("http://", "https://")):
                        summary.other_schemes += 1
                        continue
                    link = resolved
                self._judge_one(link, page, depth, page_host, pointer, scope, out)
        except Exception:
            await self._add_links(out)  # what the page gave before its links failed
            raise
        return out

    def _judge_one(self, link: object, page: Entry, depth: int, page_host: str,
                   pointer: Provenance, scope: str | ScopeRule, out: list[Entry]) -> None:
        """Count ``link``, or put it in ``out`` (counted once written)."""
        summary = self.summary
        if not isinstance(link, str):
            summary.links += 1
            self.invalid(link, InvalidURL(link, "not a string"), True)
            return
        try:
            key, host = self.key_of(link)
        except (ValueError, TypeError) as exc:
            summary.links += 1
            self.invalid(link, exc, True)
            return
        if callable(scope):
            inside = bool(scope(link, page.url))
        elif scope == "host":
            inside = host == page_host
        elif scope == "domain":
            inside = registrable_domain(host) == registrable_domain(page_host)
        else:
            inside = True
        if not inside:
            summary.links += 1
            summary.out_of_scope += 1
        elif pointer.public is not False and self._private(host):
            summary.links += 1
            summary.private_links += 1
        else:
            out.append(Entry(key, link, depth, discovered=True, provenance=pointer))

    def pointer_of(self, entry: Entry) -> str | None:
        """``pointed_by`` for ``entry``'s requests, from the provenance its entry
        carries: the page it is a pointer of (``""``: a page known public), or None:
        the caller's own input, or a pointer of a page known private.

        A link an older robotgate queued without its page (provenance None) is asked
        as a pointer of a page on its own host under scope ``"host"``, where every
        link is on its page's host; under another scope its page cannot be told, and
        the crawl ends with :class:`~robotgate.store.base.StoreError` naming the
        remedy, the link left queued (never skipped on a guess)."""
        if not self.keeps_pointers:
            return None
        provenance = entry.provenance
        if provenance is not None:
            return provenance.from_url
        if self.scope == "host":
            return entry.url
        raise StoreError(
            f"the crawl's link {redact(entry.url)} was queued by an older robotgate, which"
            f" kept no link's page: under scope {self.scope!r} it cannot be judged as its"
            " page's pointer. Resume the crawl with scope='host' (where every link is on"
            " its page's host), or drop it (store.drop_crawl(name); robotgate crawls"
            " NAME --drop) and start it again")

    async def _add_links(self, chunk: list[Entry]) -> None:
        """A chunk of a page's links into the state, ahead of the page's outcome."""
        if chunk:
            self.counted(await self.state.add_links(chunk), len(chunk))

    def key_of(self, url: str) -> tuple[str, str]:
        """``url``'s key in the crawl and its host (InvalidURL for what is no URL)."""
        key = resource_key(url)
        host = _host(key)
        if self.url_key is not resource_key:
            key = self.url_key(url)
            if not isinstance(key, str):
                raise TypeError(f"url_key returned {type(key).__name__}, not str")
        return (digest_key(key) if self.digests else key), host

    def _private(self, host: str) -> bool:
        """Whether ``host`` spells a private address (or is ``localhost``): no DNS."""
        if host == "localhost" or host.endswith(".localhost"):
            return True
        address = literal_address(host)
        return address is not None and bool(self.is_private(address))


def _host(key: str) -> str:
    """The host of a resource key (no port, no user information's fingerprint)."""
    authority = key.partition("://")[2].partition("/")[0].rpartition("@")[2]
    if authority[:1] == "[":
        return authority[: authority.find("]") + 1]
    return authority.partition(":")[0]
