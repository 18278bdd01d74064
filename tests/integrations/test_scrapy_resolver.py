"""The reactor's name resolver, screened for the names public pages' pointers lead to
(robotgate.integrations.scrapy.resolver): what a connection's look-up may give.

Through Scrapy itself (a name rebound between the check and the connection):
tests/contract/test_private_addresses.py.
"""

from __future__ import annotations

import ipaddress
import sys
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import pytest

pytest.importorskip("scrapy", reason="Scrapy is not installed: pip install 'robotgate[scrapy]'")

from twisted.internet.address import IPv4Address, IPv6Address

from robotgate.integrations.scrapy.resolver import (
    GuardedNames,
    ScreeningResolver,
    install,
    uninstall,
)
from robotgate.policy.hops import REFUSED, RULE, is_private


class Inner:
    """A name resolver answering ``answers[name]`` (IPv6 addresses hold a colon)."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers

    def resolveHostName(self, receiver: Any, hostName: str, portNumber: int = 0,
                        addressTypes: Any = None, transportSemantics: str = "TCP") -> Any:
        receiver.resolutionBegan(hostName)
        for address in self.answers[hostName]:
            family = IPv6Address if ":" in address else IPv4Address
            receiver.addressResolved(family("TCP", address, portNumber))
        receiver.resolutionComplete()
        return hostName


class Receiver:
    def __init__(self) -> None:
        self.began = False
        self.addresses: list[str] = []
        self.complete = False

    def resolutionBegan(self, resolution: Any) -> None:
        self.began = True

    def addressResolved(self, address: Any) -> None:
        self.addresses.append(address.host)

    def resolutionComplete(self) -> None:
        self.complete = True


def look_up(resolver: ScreeningResolver, name: str) -> list[str]:
    receiver = Receiver()
    resolver.resolveHostName(receiver, name, 80)
    assert receiver.began and receiver.complete
    return receiver.addresses


ANSWERS = {"public.test": ["93.184.216.34"], "rebound.test": ["10.0.0.7"],
           "dual.test": ["93.184.216.34", "::1"], "xn--fa-hia.de": ["169.254.169.254"],
           "faß.de": ["169.254.169.254"]}


def screening(private: Any = is_private) -> ScreeningResolver:
    return ScreeningResolver(Inner(ANSWERS), GuardedNames(private))


def test_a_guarded_name_answering_a_private_address_gets_no_address() -> None:
    resolver = screening()
    resolver.names.guard("rebound.test")
    assert look_up(resolver, "rebound.test") == []
    refused = resolver.names.refusal("rebound.test", "a redirect")
    assert refused is not None and refused.outcome == REFUSED and not refused.allowed
    assert "10.0.0.7" in refused.reason and RULE in refused.reason
    assert "rebound.test" in refused.reason and "a redirect" in refused.reason
    assert resolver.names.refusal("rebound.test", "a redirect") is None  # told once


def test_any_private_address_refuses_them_all() -> None:
    resolver = screening()
    resolver.names.guard("dual.test")
    assert look_up(resolver, "dual.test") == []


def test_a_guarded_name_answering_public_addresses_gets_them() -> None:
    resolver = screening()
    resolver.names.guard("public.test")
    assert look_up(resolver, "public.test") == ["93.184.216.34"]
    assert resolver.names.refusal("public.test", "a pointer") is None


def test_a_name_no_pointer_leads_to_is_not_screened() -> None:
    # The user's own input (and a private page's pointer) may reach a private address.
    resolver = screening()
    assert look_up(resolver, "rebound.test") == ["10.0.0.7"]
    resolver.names.guard("rebound.test")
    resolver.names.guard("rebound.test")
    resolver.names.unguard("rebound.test")
    assert look_up(resolver, "rebound.test") == []  # one pointer still on its way
    resolver.names.unguard("rebound.test")
    assert look_up(resolver, "rebound.test") == ["10.0.0.7"]


def test_an_internationalised_name_is_guarded_as_its_url_spells_it() -> None:
    # The URL holds the IDNA spelling; Twisted asks its resolver for the Unicode one.
    resolver = screening()
    resolver.names.guard("XN--FA-HIA.DE.")
    assert look_up(resolver, "faß.de") == []
    assert resolver.names.refusal("xn--fa-hia.de", "a pointer") is not None


def test_the_gates_is_private_rule_decides() -> None:
    resolver = screening(private=lambda address: address == ipaddress.ip_address("93.184.216.34"))
    resolver.names.guard("rebound.test")
    resolver.names.guard("public.test")
    assert look_up(resolver, "rebound.test") == ["10.0.0.7"]
    assert look_up(resolver, "public.test") == []


def test_install_wraps_the_reactors_name_resolver_and_keeps_its_simple_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    inner, simple = Inner(ANSWERS), object()

    class Reactor:
        def __init__(self) -> None:
            self.nameResolver: Any = inner
            self.resolver: Any = simple

        def installNameResolver(self, resolver: Any) -> Any:
            previous, self.nameResolver = self.nameResolver, resolver
            self.resolver = SimpleNamespace(over=resolver)  # as Twisted's does
            return previous

    reactor = Reactor()
    monkeypatch.setitem(sys.modules, "twisted.internet.reactor", reactor)
    screen = install(GuardedNames(is_private))
    assert screen is not None and reactor.nameResolver is screen and screen.inner is inner
    assert reactor.resolver is simple  # the check's look-up is not screened
    uninstall(screen)
    assert reactor.nameResolver is inner and reactor.resolver is simple


def test_no_reactor_no_screen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "twisted.internet.reactor", raising=False)
    assert install(GuardedNames(is_private)) is None


# -- through Scrapy: what the screen must let through --------------------------------------------


@pytest.mark.slow
async def test_a_private_page_may_still_redirect_scrapy_to_a_private_name() -> None:
    from tests.contract.test_private_addresses import scrapy_run
    from tests.contract.test_request_paths import PRIVATE, Site

    private = await Site(PRIVATE).start()
    try:
        target = quote(f"http://intranet.test:{private.port}/page", safe="")
        mine = f"http://intranet.test:{private.port}/mine"
        results = await scrapy_run([private.url("/redirect?to=" + target), mine],
                                   {"intranet.test": [PRIVATE]}, DNSCACHE_ENABLED=False)
    finally:
        await private.close()
    assert [r.get("status") for r in results] == [200, 200], results
    assert {"/page", "/mine"} <= set(private.paths())
