"""The private-network rule where Scrapy connects: the reactor's name resolver, screened.

Scrapy's HTTP handler connects through Twisted's ``HostnameEndpoint``, which asks
the reactor's name resolver (where Scrapy installs its ``DNS_RESOLVER``, caching
or not) for the addresses to connect to.  :class:`ScreeningResolver` wraps that
resolver: while a public page's pointer to a name is on its way (a redirect, a
link, a sitemap's entry, the first robots.txt request of the origin it leads to),
:class:`GuardedNames` holds the name, and an answer for it that holds any private
address gives no address at all, so the connection is never made (Twisted fails
it with ``DNSLookupError``).  The check's look-up and the connection's are two;
this judges the connection's own, so a name answering public to the check and
private to the connection (DNS rebinding) reaches nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, Protocol

import idna

try:  # the client comes with an extra: say which, not a bare ModuleNotFoundError
    import twisted.internet  # noqa: F401
except ImportError as _exc:
    raise ImportError(f"{__name__} needs Twisted: pip install 'robotgate[scrapy]'") from _exc

from twisted.internet.interfaces import IHostnameResolver, IResolutionReceiver
from zope.interface import implementer  # type: ignore[import-untyped]

from ...decision import Decision
from ...policy.hops import REFUSED, RULE, IsPrivate, host_name, literal_address

__all__ = ["GuardedNames", "ScreeningResolver", "install", "uninstall"]

#: Refused names remembered for the refusals to explain (a name is forgotten once
#: its refusal is told; past this many, all are).
_REMEMBERED = 1024


class Receiver(Protocol):
    """Twisted's ``IResolutionReceiver``, as this module calls it."""

    def resolutionBegan(self, resolutionInProgress: Any) -> None: ...

    def addressResolved(self, address: Any) -> None: ...

    def resolutionComplete(self) -> None: ...


class NameResolver(Protocol):
    """Twisted's ``IHostnameResolver``, as this module calls it."""

    def resolveHostName(self, resolutionReceiver: Receiver, hostName: str,
                        portNumber: int = 0, addressTypes: Any = None,
                        transportSemantics: str = "TCP") -> Any: ...


def name_key(name: str) -> str:
    """``name`` as the guard holds it: lower case, no trailing dot, IDNA as the URL has it
    (Twisted hands its resolver the Unicode spelling of an internationalised name)."""
    key = host_name(name)
    if key.isascii():
        return key
    try:
        return idna.encode(key, uts46=True).decode("ascii")
    except idna.IDNAError:
        return key


class GuardedNames:
    """The names public pages' pointers are being fetched from, and the non-public
    addresses their connections' look-ups found.

    The middleware guards a name from a pointer's admission until its answer (or
    failure); the screening resolver reads it for every look-up.
    """

    def __init__(self, is_private: IsPrivate) -> None:
        self.is_private = is_private
        self._guarded: dict[str, int] = {}  # name -> guarded requests on their way
        self._refused: dict[str, str] = {}  # name -> the non-public address it answered

    def guard(self, host: str) -> None:
        key = name_key(host)
        self._guarded[key] = self._guarded.get(key, 0) + 1

    def unguard(self, host: str) -> None:
        key = name_key(host)
        left = self._guarded.get(key, 0) - 1
        if left > 0:
            self._guarded[key] = left
        else:
            self._guarded.pop(key, None)

    def guarded(self, name: str) -> bool:
        return name_key(name) in self._guarded

    def screen(self, name: str, addresses: Sequence[Any]) -> bool:
        """Whether a connection to the guarded ``name`` may use ``addresses``: not when
        any of them is private (or unreadable), which is remembered for :meth:`refusal`."""
        for found in addresses:
            text = str(getattr(found, "host", ""))
            address = literal_address(text)
            if address is None or self.is_private(address):
                if len(self._refused) >= _REMEMBERED:
                    self._refused.clear()
                self._refused[name_key(name)] = str(address) if address is not None else repr(text)
                return False
        return True

    def refusal(self, host: str, what: str) -> Decision | None:
        """Why the connection of ``what`` (a pointer, a redirect) to ``host`` found no
        address, if the screen refused it; told once."""
        address = self._refused.pop(name_key(host), None)
        if address is None:
            return None
        return Decision(False, f"refused {what} from a public site to {host}: the look-up its "
                               f"connection made found a non-public address ({address}) ({RULE})",
                        outcome=REFUSED)


@implementer(IResolutionReceiver)
class _Screen:
    """Holds a guarded name's addresses back until its look-up is complete, then passes
    them on if they are all public, none otherwise."""

    def __init__(self, receiver: Receiver, name: str, names: GuardedNames) -> None:
        self.receiver = receiver
        self.name = name
        self.names = names
        self.addresses: list[Any] = []  # Twisted's IPv4Address and IPv6Address

    def resolutionBegan(self, resolutionInProgress: Any) -> None:
        self.receiver.resolutionBegan(resolutionInProgress)

    def addressResolved(self, address: Any) -> None:
        self.addresses.append(address)

    def resolutionComplete(self) -> None:
        if self.names.screen(self.name, self.addresses):
            for address in self.addresses:
                self.receiver.addressResolved(address)
        self.receiver.resolutionComplete()


@implementer(IHostnameResolver)
class ScreeningResolver:
    """The reactor's name resolver (``inner``) with the answers for guarded names screened."""

    def __init__(self, inner: NameResolver, names: GuardedNames) -> None:
        self.inner = inner
        self.names = names

    def resolveHostName(self, resolutionReceiver: Receiver, hostName: str,
                        portNumber: int = 0, addressTypes: Any = None,
                        transportSemantics: str = "TCP") -> Any:
        receiver: Receiver = resolutionReceiver
        if self.names.guarded(hostName):
            receiver = _Screen(resolutionReceiver, hostName, self.names)
        return self.inner.resolveHostName(receiver, hostName, portNumber, addressTypes,
                                          transportSemantics)


def _reactor() -> Any:
    """The running Twisted reactor, if one is installed (never installs one)."""
    return sys.modules.get("twisted.internet.reactor")


def install(names: GuardedNames) -> ScreeningResolver | None:
    """Wrap the reactor's name resolver (the one Scrapy installed from ``DNS_RESOLVER``)
    with a screen for ``names``; None without a reactor (Scrapy's reactorless mode).

    The reactor's simple resolver (``reactor.resolve``, the check's look-up) is kept."""
    reactor = _reactor()
    install_name_resolver = getattr(reactor, "installNameResolver", None)
    if install_name_resolver is None:
        return None
    simple = reactor.resolver
    screening = ScreeningResolver(reactor.nameResolver, names)
    install_name_resolver(screening)
    reactor.resolver = simple  # installNameResolver replaced it with one over the screen
    return screening


def uninstall(screening: ScreeningResolver) -> None:
    """Put the resolver ``screening`` wraps back, unless another was installed over it
    (then it stays, screening the names it guards: none once its crawl is over)."""
    reactor = _reactor()
    if reactor is None or reactor.nameResolver is not screening:
        return
    simple = reactor.resolver
    reactor.installNameResolver(screening.inner)
    reactor.resolver = simple
