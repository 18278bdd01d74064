"""The gate's own questions about a URL: may the robot fetch it, why, and may its text
and data be mined; a page's pointer judged by where it leads before anything else.

:class:`Questions` answers ``gate.allowed``, ``gate.decide`` and ``gate.tdm``: the
private-network rule first for a pointer (its refusal, or the robots.txt request
guarded as the pointer's turn guards it), then robots.txt's verdict, then (with
TDMRep) the origin's tdmrep.json where the robot may go.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..decision import Decision
from ..errors import GateClosed
from ..policy.hops import A_POINTER, UNGUARDED, IsPrivate, PointerVerdict, Resolve
from ..policy.provenance import INPUT, Provenance, pointer_of
from ..policy.site import SiteRules
from ..urls import as_sent, split_origin
from .redirects import provenance_verdict
from .verdicts import Verdicts

if TYPE_CHECKING:
    from ..policy.tdm import TdmVerdict
    from ..robots.directives import PageDirectives
    from .tdmrep_cache import TdmRepCache

__all__ = ["Questions", "provenance_of"]


def provenance_of(pointed_by: object) -> Provenance:
    """``pointed_by`` as the gate's calls take it, as the value a request carries:
    None, the caller's input; a page's URL (``""``: a page known to be public), that
    page's pointer; a :class:`Provenance` as it is."""
    if pointed_by is None:  # most calls: the caller's own URL
        return INPUT
    if isinstance(pointed_by, Provenance):
        return pointed_by
    if not isinstance(pointed_by, str):
        raise TypeError(f"pointed_by is a page's URL, a Provenance or None, "
                        f"not {type(pointed_by).__name__}")
    return pointer_of(pointed_by)


class Questions:
    """Answers about URLs from ``verdicts`` and (with TDMRep) ``tdm``; ``refuse_private``:
    whether a public page's pointer into a private address (``is_private``, looked up
    with ``resolve``) is refused."""

    def __init__(self, verdicts: Verdicts, resolve: Resolve, is_private: IsPrivate, *,
                 refuse_private: bool = True, tdm: TdmRepCache | None = None) -> None:
        self.verdicts = verdicts
        self.resolve = resolve
        self.is_private = is_private
        self.refuse_private = refuse_private
        self.tdm_cache = tdm
        #: True once the gate closes: no request is made for a question (cached rules
        #: answer, or GateClosed).
        self.closed = False

    def close(self) -> None:
        """From now on no question makes a request."""
        self.closed = True

    async def allowed(self, url: str, pointed_by: object = None, via: object = None) -> bool:
        """May the robot fetch ``url``, a request of ``pointed_by`` (see
        :func:`provenance_of`)?  ``via``: the route the request for ``url`` takes (an
        adapter's value: aiohttp's proxy), which a robots.txt fetch this starts takes too."""
        provenance = provenance_of(pointed_by)
        verdicts = self.verdicts
        hit = verdicts.cached(url := as_sent(url)) if provenance.is_input else None
        if hit is not None:
            return hit[0].site.allowed(hit[1], verdicts.agent)
        judged = await self._rules_for(url, provenance, via)
        if not isinstance(judged, tuple):
            return False  # the pointer's refusal: no robots.txt asked
        return judged[0].allowed(judged[1], verdicts.agent)

    async def decide(self, url: str, pointed_by: object = None, via: object = None) -> Decision:
        """The verdict for ``url`` with its reason; a refused pointer: the refusal.
        ``via`` as :meth:`allowed` takes it (tdmrep.json is asked by it too)."""
        judged = await self._rules_for(url := as_sent(url), provenance_of(pointed_by), via)
        if not isinstance(judged, tuple):
            return judged  # the pointer's refusal: no robots.txt asked
        decision = judged[0].decide(judged[1], self.verdicts.agent)
        tdm = self.tdm_cache
        if tdm is not None and decision.allowed:
            # tdmrep.json is asked only where the robot may go, guarded as robots.txt is.
            pointer = judged[2]
            return replace(decision, tdm=await tdm.reservation(
                url, guard=pointer.guard, checked=pointer.addresses, via=via))
        return decision

    async def tdm(self, url: str, page: PageDirectives | None,
                  pointed_by: object = None, via: object = None) -> TdmVerdict:
        """Whether text-and-data-mining rights are reserved for ``url``: the origin's
        tdmrep.json (with TDMRep, asked by the route ``via`` as :meth:`allowed` takes
        it), then ``page``'s headers and meta tags."""
        tdm = self.tdm_cache
        if tdm is None:
            from ..policy.tdm import tdm_verdict

            return tdm_verdict(url, None, None, page)
        if self.closed:
            raise GateClosed("the gate is closed")
        pointer = await self._pointer(url := as_sent(url),
                                      provenance_of(pointed_by)) or UNGUARDED
        # A refused pointer's request is guarded all the same: its connection refuses,
        # and the verdict says why (the rule, the address).
        guard = pointer.guard or pointer.refused is not None
        return await tdm.reservation(
            url, page, guard=guard, checked=pointer.addresses if pointer.guard else (), via=via)

    async def _rules_for(self, url: str, provenance: Provenance, via: object = None
                         ) -> tuple[SiteRules, str, PointerVerdict] | Decision:
        """The rules of ``url``'s origin (robots.txt fetched once if needed), the part
        of ``url`` they judge, and the pointer's verdict; for ``provenance``'s pointer,
        the private-network rule first: its refusal, or the robots.txt request guarded
        as the pointer's turn guards it.  A fetch it starts takes the route ``via``."""
        origin, rest = split_origin(url)
        # The rest of the URL is its path (cheaper to match than the whole URL),
        # unless it starts with "//", which would read as a host.
        path = url if rest[:2] == "//" else rest
        verdicts = self.verdicts
        pointer = await self._pointer(url, provenance)
        if pointer is None:
            return await verdicts.site(origin, via), path, UNGUARDED
        if pointer.refused is not None:
            return pointer.refused
        site = verdicts.cache.cached(origin) or await verdicts.fetched(
            origin, pointer.guard, pointer.addresses, via)
        return site, path, pointer

    async def _pointer(self, url: str, provenance: Provenance) -> PointerVerdict | None:
        """The private-network rule's verdict on ``provenance``'s pointer to ``url``
        (None: not judged, for the user's own input, a private page's pointer, the rule
        off, or a closed gate).  A page stored as public is not looked up again."""
        if not self.refuse_private or self.closed:
            return None
        return await provenance_verdict(provenance, url, self.resolve, self.is_private,
                                        A_POINTER)
