"""``robotgate.Error``: the root of every exception robotgate raises at its callers.

A leaf of its own, so that :mod:`robotgate.urls` (``InvalidURL``) and
:mod:`robotgate.errors` can both derive from it.
"""

from __future__ import annotations

import weakref
from typing import Any

from .redaction import said_exception

__all__ = ["Error"]

# BaseException's own slots for the chain, which the properties below stand before.
_CAUSE: Any = BaseException.__dict__["__cause__"]
_CONTEXT: Any = BaseException.__dict__["__context__"]


class Error(Exception):
    """The base of every exception robotgate raises: ``except robotgate.Error`` catches
    a refusal, an invalid URL, a closed gate, a body too large or a store in trouble.

    Each one also derives from the built-in exception it always was (``InvalidURL``
    and ``BodyTooLarge`` from :class:`ValueError`, ``GateClosed`` and ``StoreError``
    from :class:`RuntimeError`), so ``except`` clauses written for those still work.
    """

    #: Its str, repr and args are redacted as it is made: said as it is.
    _said_as_is = True

    # The exceptions it was raised from, as a traceback prints them: redacted (a client's
    # error quotes the proxy's URL, password and all).  Read through these properties
    # (traceback, logging); the interpreter's own printer of an uncaught exception reads
    # the originals before Python 3.13.
    @property
    def __cause__(self) -> BaseException | None:
        return self._said_link("_said_cause", _CAUSE.__get__(self))

    @__cause__.setter
    def __cause__(self, value: BaseException | None) -> None:
        _CAUSE.__set__(self, value)

    @property
    def __context__(self) -> BaseException | None:
        return self._said_link("_said_context", _CONTEXT.__get__(self))

    @__context__.setter
    def __context__(self, value: BaseException | None) -> None:
        _CONTEXT.__set__(self, value)

    def _said_link(self, name: str, link: BaseException | None) -> BaseException | None:
        if link is None:
            return None
        links = _SAID_LINKS.setdefault(self, {})
        cached = links.get(name)
        if cached is not None and cached[0] is link:
            return cached[1]
        said = said_exception(link)
        links[name] = (link, said)
        return said


# The links said, by error, so a link reads as one object each time: kept beside the
# error (an error's __dict__ is pickled, and the originals would go with it), for as
# long as the error lives.
_SAID_LINKS: weakref.WeakKeyDictionary[Error, dict[str, tuple[BaseException, BaseException]]] = (
    weakref.WeakKeyDictionary())
