"""Hops into private networks (policy/network.py): which redirects a public site may make."""

from __future__ import annotations

import pytest

from robotgate.policy.network import (
    address_is_public,
    host_is_public,
    refusal,
    strip_credentials,
)

PUBLIC = "http://example.com/robots.txt"
PUBLIC_IP = "http://93.184.216.34/robots.txt"

NON_PUBLIC_TARGETS = [
    "http://127.0.0.1/admin",
    "http://127.255.0.9:8080/",
    "http://localhost/",
    "http://LOCALHOST./x",
    "http://svc.localhost/",
    "http://10.0.0.1/",
    "http://172.16.5.4/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://169.254.1.1/",
    "http://0.0.0.0/",
    "http://100.64.0.1/",  # carrier-grade NAT: not global
    "http://[::1]/",
    "http://[::1]:8080/x",
    "http://[fc00::1]/",
    "http://[fd12:3456::1]/",
    "http://[fe80::1]/",
    "http://[fe80::1%25eth0]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://[::ffff:10.1.2.3]/",
    "http://224.0.0.1/",  # multicast
]


@pytest.mark.parametrize("target", NON_PUBLIC_TARGETS)
@pytest.mark.parametrize("source", [PUBLIC_IP, "https://[2606:4700::1111]/",
                                    "http://[::ffff:93.184.216.34]/"])
def test_public_to_non_public_is_refused(source: str, target: str) -> None:
    why = refusal(source, target)
    assert why is not None
    assert why.startswith("refused a redirect from a public site to a non-public address")


@pytest.mark.parametrize("target", [
    "http://example.org/robots.txt",
    "https://93.184.216.34/robots.txt",
    "http://[2606:4700::1111]/",
    "http://[::ffff:93.184.216.34]/",
])
def test_public_to_public_is_followed(target: str) -> None:
    assert refusal(PUBLIC, target) is None


@pytest.mark.parametrize("source", [
    "http://127.0.0.1:8080/robots.txt",
    "http://localhost:8080/robots.txt",
    "http://10.0.0.1/robots.txt",
    "http://[::1]:9000/robots.txt",
    "http://169.254.169.254/",
])
@pytest.mark.parametrize("target", ["http://127.0.0.1:9090/robots.txt", "http://192.168.0.1/",
                                    "http://[fe80::1]/", "http://example.com/"])
def test_private_origins_are_unaffected(source: str, target: str) -> None:
    assert refusal(source, target) is None


@pytest.mark.parametrize("target", ["http://127.0.0.1/", "http://169.254.169.254/",
                                    "http://internal.example/"])
def test_names_are_left_to_the_adapter(target: str) -> None:
    # A name says nothing by itself (site.example may well live on 127.0.0.1):
    # the adapter resolves it and checks the address.
    assert host_is_public("internal.example") is None
    assert refusal(PUBLIC, target) is None
    assert refusal(PUBLIC_IP, "http://internal.example/") is None
    assert host_is_public("localhost") is False
    assert host_is_public("[::1]") is False
    assert host_is_public("8.8.8.8") is True


def test_the_reason_names_the_target() -> None:
    why = refusal(PUBLIC_IP, "http://169.254.169.254/latest/meta-data/")
    assert why is not None and "169.254.169.254" in why


def test_unparseable_urls_do_not_raise() -> None:
    # (an unparseable target is refused earlier, by split_origin in the flow)
    refusal(PUBLIC, "http://[::1/")
    refusal("http://[::1/", PUBLIC)
    assert address_is_public("not an address") is False


@pytest.mark.parametrize(("url", "expected"), [
    ("http://user:pw@example.com/x", "http://example.com/x"),
    ("http://user@example.com/x", "http://example.com/x"),
    ("https://a:b@c@example.com:8443/", "https://example.com:8443/"),
    ("http://example.com/a@b", "http://example.com/a@b"),
    ("http://example.com/?q=a@b", "http://example.com/?q=a@b"),
    ("http://example.com#x@y", "http://example.com#x@y"),
    ("http://u:p@example.com", "http://example.com"),
    ("/relative/a@b", "/relative/a@b"),
    ("http://example.com/x", "http://example.com/x"),
])
def test_strip_credentials(url: str, expected: str) -> None:
    assert strip_credentials(url) == expected
