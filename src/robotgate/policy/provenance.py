"""Who pointed at a request: the value every request carries to the connection.

A request is either the caller's own **input** (never refused for its address: their
choice) or a **pointer** of a page (a link, a redirect, a subresource, a sitemap's
entry), held to the private-network rule (:mod:`robotgate.policy.hops`). The value is
made where the request is made and travels with it, stored with a queued link so a
resumed run or another worker judges the link as the run that found it did. A path
that cannot say where a request came from has no provenance to give, and does not
send.

Standard library only, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["INPUT", "Provenance", "pointer_of"]


@dataclass(frozen=True, slots=True)
class Provenance:
    """``page``: the URL of the page whose pointer the request is (None: the caller's
    own input). ``public``: whether that page's origin was public when the pointer was
    found (None: not known yet; the page's host is looked up where the pointer is
    judged)."""

    page: str | None = None
    public: bool | None = None

    @property
    def is_input(self) -> bool:
        return self.page is None

    @property
    def from_url(self) -> str | None:
        """The pointing page as the private-network rule's check takes it: None for
        input, ``""`` for a page known to be public (no look-up), the page's URL when
        its origin is still to be looked up. A page known to be private points where
        it likes, as input does."""
        if self.page is None or self.public is False:
            return None
        if self.public:
            return ""
        return self.page

    def __str__(self) -> str:
        if self.page is None:
            return "input"
        where = {True: "public", False: "private", None: "unjudged"}[self.public]
        return f"pointer of {self.page or 'a public page'} ({where})"


#: The caller's own input.
INPUT = Provenance()


def pointer_of(page: str, public: bool | None = None) -> Provenance:
    """A pointer of the page at ``page`` (``""``: a page known to be public)."""
    if page == "" and public is None:
        public = True
    return Provenance(page, public)
