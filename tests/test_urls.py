"""robotgate.urls: origins, invalid URLs, the path rules see, percent-encoding normalisation."""

from __future__ import annotations

import pytest

from robotgate import InvalidURL
from robotgate.urls import normalise_path, origin_of, path_of, robots_url, split_origin

# -- origins ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://example.com/", "http://example.com"),
        ("http://example.com", "http://example.com"),
        ("HTTP://EXAMPLE.COM/Path", "http://example.com"),
        ("https://WWW.Example.Com:443/x", "https://www.example.com"),
        ("http://A.com:80/", "http://a.com"),
        ("https://a.com:0443/", "https://a.com"),
        ("http://a.com:8080/x", "http://a.com:8080"),
        ("https://a.com:80/", "https://a.com:80"),
        ("http://a.com:443/", "http://a.com:443"),
        ("http://a.com:/x", "http://a.com"),
        ("http://user:secret@a.com/x", "http://a.com"),
        ("http://a.com./x", "http://a.com"),
        ("http://a.com?q=1", "http://a.com"),
        ("http://a.com#frag", "http://a.com"),
        ("http://192.0.2.1:80/", "http://192.0.2.1"),
        ("http://[::1]/", "http://[::1]"),
        ("http://[2001:DB8::1]:8080/x", "http://[2001:db8::1]:8080"),
        ("http://münchen.de/", "http://xn--mnchen-3ya.de"),
        ("https://Bücher.example/x", "https://xn--bcher-kva.example"),
        ("http://xn--mnchen-3ya.de/", "http://xn--mnchen-3ya.de"),
        ("http://例え.テスト/", "http://xn--r8jz45g.xn--zckzah"),
    ],
)
def test_origin_normalisation(url: str, origin: str) -> None:
    assert origin_of(url) == origin
    assert split_origin(url)[0] == origin


def test_default_ports_give_one_origin() -> None:
    assert origin_of("http://A.com:80/") == origin_of("http://a.com/")
    assert origin_of("https://a.com:443/") == origin_of("https://a.com")
    assert origin_of("http://a.com/") != origin_of("https://a.com/")
    assert origin_of("http://a.com/") != origin_of("http://a.com:8080/")


@pytest.mark.parametrize(
    ("url", "rest"),
    [
        ("http://A.com:80/x?q#f", "/x?q#f"),
        ("http://a.com", ""),
        ("http://a.com?q", "?q"),
        ("http://a.com#f", "#f"),
        ("https://a.com/", "/"),
    ],
)
def test_split_origin_rest(url: str, rest: str) -> None:
    assert split_origin(url)[1] == rest


def test_split_origin_is_stable_when_cached() -> None:
    for _ in range(3):
        assert split_origin("HTTP://Cache.Example:80/a") == ("http://cache.example", "/a")
        assert split_origin("http://cache.example/b") == ("http://cache.example", "/b")


def test_robots_url() -> None:
    assert robots_url(origin_of("HTTPS://Example.com:443/x")) == "https://example.com/robots.txt"


# -- invalid URLs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/",
        "mailto:someone@example.com",
        "javascript:alert('://')",
        "file:///etc/passwd",
        "example.com/path",
        "/just/a/path",
        "//example.com/x",
        "",
        "http://",
        "http:///path",
        "http:example.com",
        "https://",
        "http://./",
        "http://a.com:99999/",
        "http://a.com:port/",
        "http://[::1/",
        "http://exa mple.com/",
        "http://a.com\\evil.com/",
        "http://" + "a" * 64 + "é.com/",
    ],
)
def test_invalid_urls_raise_invalid_url_naming_the_url(url: str) -> None:
    for func in (split_origin, origin_of):
        with pytest.raises(InvalidURL) as info:
            func(url)
        assert isinstance(info.value, ValueError)
        assert repr(url) in str(info.value)
        assert info.value.url == url
        assert info.value.why


@pytest.mark.parametrize("url", [None, b"http://example.com/", 42])
def test_non_strings_are_invalid(url: object) -> None:
    with pytest.raises(InvalidURL, match="not a string"):
        origin_of(url)  # type: ignore[arg-type]


def test_invalid_url_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="scheme must be http or https"):
        origin_of("ftp://example.com/")


# -- path_of -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("https://example.com/a/b?x=1#top", "/a/b?x=1"),
        ("https://example.com", "/"),
        ("https://example.com/", "/"),
        ("https://example.com?q=1", "/?q=1"),
        ("https://example.com#top", "/"),
        ("https://example.com:8080/x", "/x"),
        ("HTTP://EXAMPLE.COM/X", "/X"),
        ("http://a.com/x;params?q", "/x;params?q"),
        ("http://a.com#f/x", "/"),
        ("http://a.com/a://b", "/a://b"),
        ("/a/b?c=d", "/a/b?c=d"),
        ("/a#b", "/a"),
        ("/", "/"),
        ("", "/"),
        ("?q=1", "/?q=1"),
        ("#f", "/"),
        ("//example.com/p?q", "/p?q"),
        ("/a://b", "/a://b"),
        ("/ツ?q=ツ", "/ツ?q=ツ"),
    ],
)
def test_path_of(url: str, path: str) -> None:
    assert path_of(url) == path


# -- normalise_path ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("/foo/bar", "/foo/bar"),
        ("/foo/bar/ツ", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%e3%83%84", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%62%61%7A", "/foo/bar/baz"),
        ("/%62%61%7a?%2f", "/baz?%2F"),
        ("/%41%5A%61%7A%30%39%2D%2E%5F%7E", "/AZaz09-._~"),
        ("/%2F%3F%23%25%20%2A%24", "/%2F%3F%23%25%20%2A%24"),
        ("/%2f%3f%2a", "/%2F%3F%2A"),
        ("/100%", "/100%"),
        ("/%zz/%4", "/%zz/%4"),
        ("/%%41", "/%A"),
        ("/é?q=é", "/%C3%A9?q=%C3%A9"),
        ("/\U0001f600", "/%F0%9F%98%80"),
        ("/a b", "/a b"),
    ],
)
def test_normalise_path(raw: str, normal: str) -> None:
    assert normalise_path(raw) == normal


def test_normalise_path_is_idempotent_and_ascii() -> None:
    for raw in ("/foo/bar/ツ", "/%62%61%7a?%2f", "/%%41", "/é%c3%a9", "/\ud800"):
        once = normalise_path(raw)
        assert once.isascii()
        assert normalise_path(once) == once


def test_normalise_path_does_not_raise_on_lone_surrogates() -> None:
    assert normalise_path("/\udcff") == "/%ED%B3%BF"
