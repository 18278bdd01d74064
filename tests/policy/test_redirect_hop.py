"""The redirect rule (src/robotgate/policy/redirect_hop.py): the request a redirect is
followed with, the same for every adapter that follows redirects through the exchange."""

from __future__ import annotations

import pytest

from robotgate.policy.redirect_hop import BODY_HEADERS, ORIGIN_SCOPED, next_hop

# (status, method) -> (method, keeps_body): aiohttp 3.14's and the Fetch standard's.
METHODS = {
    (301, "GET"): ("GET", True), (302, "GET"): ("GET", True), (303, "GET"): ("GET", False),
    (307, "GET"): ("GET", True), (308, "GET"): ("GET", True),
    (301, "HEAD"): ("HEAD", True), (302, "HEAD"): ("HEAD", True),
    (303, "HEAD"): ("HEAD", True), (307, "HEAD"): ("HEAD", True), (308, "HEAD"): ("HEAD", True),
    (301, "POST"): ("GET", False), (302, "POST"): ("GET", False), (303, "POST"): ("GET", False),
    (307, "POST"): ("POST", True), (308, "POST"): ("POST", True),
    (301, "PUT"): ("PUT", True), (302, "PUT"): ("PUT", True), (303, "PUT"): ("GET", False),
    (307, "PUT"): ("PUT", True), (308, "PUT"): ("PUT", True),
}


@pytest.mark.parametrize(("status", "method"), sorted(METHODS))
def test_the_method_and_body_follow_aiohttp_and_browsers(status: int, method: str) -> None:
    hop = next_hop(status, method, "http://a.test/x", "http://a.test/y")
    assert (hop.method, hop.keeps_body) == METHODS[status, method]
    assert hop.body(b"data") == (b"data" if hop.keeps_body else None)
    assert hop.dropped == (frozenset() if hop.keeps_body else BODY_HEADERS)
    assert not hop.leaves_origin


@pytest.mark.parametrize(("from_url", "to_url", "leaves"), [
    ("http://a.test/", "http://A.TEST:80/b", False),
    ("http://a.test/", "https://a.test/", True),
    ("http://a.test/", "http://a.test:8080/", True),
    ("http://a.test/", "http://b.test/", True),
    ("http://a.test/", "not a url", True),
])
def test_credentials_stay_on_their_origin(from_url: str, to_url: str, leaves: bool) -> None:
    hop = next_hop(307, "GET", from_url, to_url)
    assert hop.leaves_origin is leaves
    headers = {"Authorization": "Bearer x", "COOKIE": "sid=1", "Proxy-Authorization": "p",
               "X-Custom": "kept"}
    kept = hop.headers(headers)
    assert kept == ({"X-Custom": "kept"} if leaves else headers)
    assert (hop.dropped >= ORIGIN_SCOPED) is leaves


def test_a_get_made_of_a_post_goes_without_its_body_headers() -> None:
    hop = next_hop(302, "post", "http://a.test/", "http://a.test/b")
    assert hop.method == "GET"
    assert hop.headers({"Content-Type": "text/plain", "Content-Length": "3", "X-A": "1"}) == {
        "X-A": "1"}
