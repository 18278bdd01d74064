"""``robotgate.Error``: the root of every exception robotgate raises at its callers.

A leaf of its own, so that :mod:`robotgate.urls` (``InvalidURL``) and
:mod:`robotgate.errors` can both derive from it.
"""

from __future__ import annotations

__all__ = ["Error"]


class Error(Exception):
    """The base of every exception robotgate raises: ``except robotgate.Error`` catches
    a refusal, an invalid URL, a closed gate, a body too large or a store in trouble.

    Each one also derives from the built-in exception it always was (``InvalidURL``
    and ``BodyTooLarge`` from :class:`ValueError`, ``GateClosed`` and ``StoreError``
    from :class:`RuntimeError`), so ``except`` clauses written for those still work.
    """
