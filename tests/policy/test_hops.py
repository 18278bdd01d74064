"""The redirect hop rule (robotgate.policy.hops): spellings, credentials, look-ups."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robotgate.policy.hops import (
    A_POINTER,
    REFUSED,
    RULE,
    hop_flow,
    is_private,
    judge_hop,
    judge_peer,
    literal_address,
    parse_hop,
    redirect_location,
)
from robotgate.politeness.redirects import hop_decision, pointer_verdict

PUBLIC_ORIGIN = "http://93.184.216.34/page"

PRIVATE_NETS = [ipaddress.ip_network(n) for n in (
    "127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16",
    "0.0.0.0/8", "100.64.0.0/10", "224.0.0.0/4", "240.0.0.0/4")]


def _resolver(table: dict[str, Sequence[str]]):  # type: ignore[no-untyped-def]
    async def resolve(host: str) -> Sequence[str]:
        if host not in table:
            raise OSError(f"no such host {host}")
        return table[host]

    return resolve


def _decide(from_url: str, to_url: str, table: dict[str, Sequence[str]] | None = None,
            private=is_private):  # type: ignore[no-untyped-def]
    return asyncio.run(hop_decision(from_url, to_url, _resolver(table or {}), private))


def test_the_hop_flow_is_pure_and_asks_only_for_names() -> None:
    """The flow needs no loop: it names each host to look up, literals never."""
    flow = hop_flow("http://www.example.com/a", "http://intranet.test/")
    assert next(flow) == "www.example.com"
    assert flow.send(["93.184.216.34"]) == "intranet.test"
    with pytest.raises(StopIteration) as done:
        flow.send([])  # the target's look-up failed: refused
    assert done.value.value.outcome == REFUSED
    literal = hop_flow("http://93.184.216.34/", "http://0x7f.1/x")
    with pytest.raises(StopIteration) as done:
        next(literal)  # both hosts are addresses: nothing to look up
    assert "127.0.0.1" in done.value.value.reason


@st.composite
def private_ipv4(draw: st.DrawFn) -> ipaddress.IPv4Address:
    net = draw(st.sampled_from(PRIVATE_NETS))
    offset = draw(st.integers(0, net.num_addresses - 1))
    return ipaddress.IPv4Address(int(net.network_address) + offset)


def _part(draw: st.DrawFn, value: int) -> str:
    form = draw(st.sampled_from(["dec", "hex", "HEX", "oct"]))
    if form == "hex":
        return f"0x{value:x}"
    if form == "HEX":
        return f"0X{value:X}"
    if form == "oct":
        return f"0{value:o}"
    return str(value)


@st.composite
def ipv4_spelling(draw: st.DrawFn, address: ipaddress.IPv4Address) -> str:
    """``address`` as resolvers also read it: 1 to 4 parts, each decimal, hex or octal."""
    value = int(address)
    octets = list(address.packed)
    parts = draw(st.integers(1, 4))
    head = octets[:parts - 1]
    last = value & ((1 << (8 * (5 - parts))) - 1)
    text = ".".join([_part(draw, b) for b in head] + [_part(draw, last)])
    return text + ("." if draw(st.booleans()) else "")


@st.composite
def private_target(draw: st.DrawFn) -> tuple[ipaddress.IPv4Address, str]:
    """A URL into a private address, spelt any way a client would still connect there."""
    address = draw(private_ipv4())
    if draw(st.booleans()):
        host = f"[::ffff:{address}]" if draw(st.booleans()) else \
            f"[::ffff:{int(address) >> 16:x}:{int(address) & 0xFFFF:x}]"
    else:
        host = draw(ipv4_spelling(address))
    userinfo = draw(st.sampled_from(["", "user@", "user:secret@", "a%40b:p@ss@"]))
    port = draw(st.sampled_from(["", ":80", ":8080"]))
    path = draw(st.sampled_from(["", "/", "/secret", "/a?b=c"]))
    fragment = draw(st.sampled_from(["", "#x", "#@evil.example"]))
    scheme = draw(st.sampled_from(["http", "https", "HTTP"]))
    return address, f"{scheme}://{userinfo}{host}{port}{path}{fragment}"


@pytest.mark.slow
@given(private_ipv4().flatmap(lambda a: st.tuples(st.just(a), ipv4_spelling(a))))
def test_every_ipv4_spelling_is_read_as_the_address_it_spells(
        case: tuple[ipaddress.IPv4Address, str]) -> None:
    address, spelling = case
    assert literal_address(spelling) == address
    # The C library's reading (what getaddrinfo connects to) agrees.
    assert ipaddress.IPv4Address(socket.inet_aton(spelling.rstrip("."))) == address


@pytest.mark.slow
@settings(max_examples=120)
@given(private_target())
def test_a_hop_from_a_public_site_into_any_spelling_of_a_private_address_is_refused(
        case: tuple[ipaddress.IPv4Address, str]) -> None:
    address, url = case
    hop = parse_hop(url)
    assert hop is not None
    mapped = hop.address
    if isinstance(mapped, ipaddress.IPv6Address):
        mapped = mapped.ipv4_mapped
    assert mapped == address
    # Nothing resolves: a literal needs no look-up, and is refused all the same.
    decision = _decide(PUBLIC_ORIGIN, url)
    assert decision is not None and decision.outcome == REFUSED and not decision.allowed


@pytest.mark.slow
@settings(max_examples=120)
@given(private_target())
def test_no_credential_or_fragment_survives_in_the_url_sent(
        case: tuple[ipaddress.IPv4Address, str]) -> None:
    _, url = case
    hop = parse_hop(url)
    assert hop is not None
    authority = hop.url.split("://", 1)[1].split("/", 1)[0].split("?", 1)[0]
    assert "@" not in authority
    assert "#" not in hop.url and "secret" not in authority
    assert hop.had_credentials == ("@" in url.split("://", 1)[1].split("/", 1)[0]
                                   .split("?", 1)[0].split("#", 1)[0])


@given(st.sampled_from(["10.1.2.3", "127.0.0.1", "::1", "fd00::5", "169.254.169.254",
                        "::ffff:10.0.0.1", "0.0.0.0", "239.1.1.1"]))
def test_a_name_that_resolves_to_any_private_address_is_refused(address: str) -> None:
    table = {"intranet.example": ["93.184.216.35", address]}
    decision = _decide(PUBLIC_ORIGIN, "http://intranet.example/x", table)
    assert decision is not None and decision.outcome == REFUSED
    assert "intranet.example" in decision.reason and "non-public" in decision.reason


def test_a_name_that_does_not_resolve_is_refused() -> None:
    decision = _decide(PUBLIC_ORIGIN, "http://gone.example/x", {"gone.example": []})
    assert decision is not None and "does not resolve" in decision.reason
    raised = _decide(PUBLIC_ORIGIN, "http://gone.example/x")  # the resolver raises
    assert raised is not None and "does not resolve" in raised.reason


def test_public_hops_and_private_origins_are_followed() -> None:
    table = {"www.example": ["93.184.216.34"], "cdn.example": ["2606:2800:220:1::1"],
             "intranet.example": ["10.0.0.7"]}
    assert _decide("http://www.example/", "http://cdn.example/x", table) is None
    assert _decide("http://intranet.example/", "http://127.0.0.1/x", table) is None
    assert _decide("http://127.0.0.1/", "http://[::1]/x", table) is None
    # No http(s) URL: not judged here (the client refuses it).
    assert _decide(PUBLIC_ORIGIN, "ftp://127.0.0.1/x", table) is None


def test_an_origin_whose_look_up_fails_counts_as_public() -> None:
    decision = _decide("http://gone.example/", "http://127.0.0.1/x")
    assert decision is not None and decision.outcome == REFUSED


def test_the_rule_is_the_callers() -> None:
    # A rule where only 127.0.0.1 is public: the loopback tests' stand-in for the Internet.
    def rule(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return str(address) != "127.0.0.1"

    assert _decide("http://127.0.0.1:8080/", "http://127.0.0.2:9090/", private=rule) is not None
    assert _decide("http://127.0.0.1:8080/", "http://127.0.0.1:9090/", private=rule) is None
    assert _decide("http://127.0.0.2/", "http://127.0.0.3/", private=rule) is None


@pytest.mark.parametrize(("host", "expected"), [
    ("2130706433", "127.0.0.1"), ("0x7f000001", "127.0.0.1"), ("017700000001", "127.0.0.1"),
    ("127.1", "127.0.0.1"), ("127.0.1", "127.0.0.1"), ("0x7F.0.0.1.", "127.0.0.1"),
    ("[::ffff:7f00:1]", "::ffff:127.0.0.1"), ("[fe80::1%eth0]", "fe80::1"),
    ("example.com", None), ("1.2.3.4.5", None), ("256.1.1.1", None), ("0x", "0.0.0.0"),
    ("4294967296", None), ("1.2.3.0x100", None), ("09.1.1.1", None), ("", None),
    ("[not-v6]", None), ("1e3.0.0.1", None),
])
def test_literal_addresses(host: str, expected: str | None) -> None:
    found = literal_address(host)
    assert found == (ipaddress.ip_address(expected) if expected is not None else None)


def test_default_rule() -> None:
    for text in ("127.0.0.1", "10.0.0.1", "169.254.169.254", "fc00::1", "fe80::1", "::",
                 "0.0.0.0", "224.0.0.1", "ff02::1", "240.0.0.1", "::ffff:192.168.1.1",
                 "100.64.0.1"):
        assert is_private(ipaddress.ip_address(text)), text
    for text in ("93.184.216.34", "2606:2800:220:1::1", "::ffff:93.184.216.34"):
        assert not is_private(ipaddress.ip_address(text)), text


def test_redirect_location_takes_location_then_uri() -> None:
    assert redirect_location({"Location": "/a", "URI": "/b"}) == "/a"
    assert redirect_location({"URI": "/b"}) == "/b"
    assert redirect_location({"Location": b"/c"}) == "/c"
    assert redirect_location({}) is None
    assert redirect_location(object()) is None

    class Broken:
        def get(self, name: str) -> str:
            raise RuntimeError("broken")

    assert redirect_location(Broken()) is None


def test_judge_hop_with_addresses_given() -> None:
    hop = parse_hop("http://svc.example/x")
    assert hop is not None
    public = [ipaddress.ip_address("93.184.216.34")]
    inside = [ipaddress.ip_address("10.0.0.7")]
    assert judge_hop(public, hop, public) is None
    refused = judge_hop(public, hop, public + inside)
    assert refused is not None and "10.0.0.7" in refused.reason
    assert judge_hop(None, hop, inside) is not None
    assert judge_hop(inside, hop, inside) is None


# -- any page's pointer: the verdict the adapters act on -----------------------------------------


def test_a_pointer_from_a_public_page_is_guarded_with_the_addresses_it_checked() -> None:
    resolve = _resolver({"shop.test": ["93.184.216.35", "2606:2800:220:1::1"]})
    verdict = asyncio.run(pointer_verdict(PUBLIC_ORIGIN, "http://shop.test/", resolve,
                                          what=A_POINTER))
    assert verdict.refused is None and verdict.guard
    assert [str(a) for a in verdict.addresses] == ["93.184.216.35", "2606:2800:220:1::1"]


def test_a_pointer_to_a_name_with_one_private_address_among_public_ones_is_refused() -> None:
    # A public A record and a private AAAA one: whichever family the client connects
    # over, one address would be private.
    resolve = _resolver({"dual.test": ["93.184.216.35", "::1"]})
    verdict = asyncio.run(pointer_verdict(PUBLIC_ORIGIN, "http://dual.test/", resolve,
                                          what=A_POINTER))
    assert verdict.refused is not None and verdict.refused.outcome == REFUSED
    assert "refused a pointer" in verdict.refused.reason and "(::1)" in verdict.refused.reason
    assert RULE in verdict.refused.reason


def test_a_pointer_from_a_private_page_is_not_guarded() -> None:
    resolve = _resolver({"intranet.test": ["10.0.0.7"], "wiki.test": ["10.0.0.8"]})
    verdict = asyncio.run(pointer_verdict("http://intranet.test/", "http://wiki.test/x",
                                          resolve))
    assert verdict.refused is None and not verdict.guard


def test_a_pointer_of_a_page_known_public_needs_no_look_up_of_it() -> None:
    resolve = _resolver({"shop.test": ["93.184.216.35"]})  # "" is no host: never looked up
    verdict = asyncio.run(pointer_verdict("", "http://shop.test/", resolve))
    assert verdict.refused is None and verdict.guard


@pytest.mark.parametrize(("peer", "refused"), [
    ("93.184.216.34", False), ("127.0.0.1", True), ("::ffff:10.0.0.1", True),
    ("fe80::1%eth0", True), ("", True), ("/run/socket", True)])
def test_the_peer_of_a_guarded_connection_is_judged_by_its_address(peer: str,
                                                                   refused: bool) -> None:
    decision = judge_peer("shop.test", peer)
    assert (decision is not None) is refused
    if decision is not None:
        assert decision.outcome == REFUSED and "shop.test" in decision.reason
