"""RFC 9309 sections 2.2.2 (the allow and disallow lines) and 2.2.3 (special characters).

Longest match wins, ``Allow`` wins ties, an empty ``Disallow`` allows,
``/robots.txt`` is always allowed, no match means allowed; ``*`` and ``$``
wildcards; patterns and paths compared after the same percent-encoding
normalisation, path plus query.  Uses the RFC's own examples (sections 2.2.2,
2.2.3, 5.1, 5.2) and the examples Google documents for its reference parser.
"""

from __future__ import annotations

import pytest

from robotgate import RobotsTxt, Rule


def group(*lines: str, agent: str = "*") -> RobotsTxt:
    return RobotsTxt.parse(f"User-agent: {agent}\n" + "".join(line + "\n" for line in lines))


# -- the basics ---------------------------------------------------------------


def test_disallow_is_a_prefix_match() -> None:
    rules = group("Disallow: /fish")
    for path in ("/fish", "/fish.html", "/fish/salmon.html", "/fishheads", "/fish.php?id=1"):
        assert rules.allowed(path, "MyBot") is False, path
    for path in ("/Fish.asp", "/catfish", "/?id=fish", "/desert/fish", "/"):
        assert rules.allowed(path, "MyBot") is True, path


def test_paths_are_case_sensitive() -> None:
    rules = group("Disallow: /Private")
    assert rules.allowed("/Private/x", "MyBot") is False
    assert rules.allowed("/private/x", "MyBot") is True


def test_no_match_means_allowed() -> None:
    rules = group("Disallow: /a", "Allow: /b")
    assert rules.allowed("/c", "MyBot") is True
    assert rules.decide("/c", "MyBot").rule is None


def test_empty_disallow_allows_everything() -> None:
    rules = group("Disallow:")
    assert rules.allowed("/", "MyBot") is True
    assert rules.allowed("/anything?at=all", "MyBot") is True


def test_empty_disallow_does_not_cancel_other_rules() -> None:
    rules = group("Disallow:", "Disallow: /x")
    assert rules.allowed("/x", "MyBot") is False
    assert rules.allowed("/y", "MyBot") is True


def test_empty_allow_allows_nothing_in_particular() -> None:
    rules = group("Allow:", "Disallow: /")
    assert rules.allowed("/x", "MyBot") is False


def test_disallow_root_blocks_everything_but_robots_txt() -> None:
    rules = group("Disallow: /")
    assert rules.allowed("/", "MyBot") is False
    assert rules.allowed("/index.html", "MyBot") is False
    assert rules.allowed("/robots.txt", "MyBot") is True


@pytest.mark.parametrize(
    "url",
    [
        "/robots.txt",
        "/robots.txt?x=1",
        "https://example.com/robots.txt",
        "http://example.com:8080/robots.txt#top",
        "/%72obots.txt",  # an encoded unreserved character equals itself
    ],
)
def test_robots_txt_is_always_allowed(url: str) -> None:
    rules = group("Disallow: /", "Disallow: /robots.txt", "Disallow: /*.txt$")
    assert rules.allowed(url, "MyBot") is True
    d = rules.decide(url, "MyBot")
    assert d.allowed is True and d.rule is None and "RFC 9309 2.2.2" in d.reason


def test_a_rule_allowing_robots_txt_explains_it() -> None:
    d = group("Allow: /robots", "Disallow: /").decide("/robots.txt", "MyBot")
    assert d.allowed and d.line is not None and "Allow: /robots" in d.reason


def test_only_robots_txt_itself_is_exempt() -> None:
    rules = group("Disallow: /")
    assert rules.allowed("/robots.txt/x", "MyBot") is False
    assert rules.allowed("/robots.txt.bak", "MyBot") is False
    assert rules.allowed("/dir/robots.txt", "MyBot") is False
    assert rules.allowed("/ROBOTS.TXT", "MyBot") is False


# -- precedence -------------------------------------------------------------


def test_longest_match_rfc_5_2() -> None:
    rules = RobotsTxt.parse(
        "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n"
    )
    assert rules.allowed("/example/page/", "foobot") is True
    assert rules.allowed("/example/page/other.gif", "foobot") is True
    assert rules.allowed("/example/page/disallowed.gif", "foobot") is False


def test_longest_match_does_not_depend_on_order() -> None:
    a = group("Disallow: /a", "Allow: /a/b", "Disallow: /a/b/c")
    b = group("Disallow: /a/b/c", "Allow: /a/b", "Disallow: /a")
    for rules in (a, b):
        assert rules.allowed("/a/x", "MyBot") is False
        assert rules.allowed("/a/b/x", "MyBot") is True
        assert rules.allowed("/a/b/c/x", "MyBot") is False


@pytest.mark.parametrize(
    "lines",
    [
        ("Allow: /page", "Disallow: /page"),
        ("Disallow: /page", "Allow: /page"),
        ("Disallow: /p*ge", "Allow: /pa*e"),
        ("Disallow: /pag*", "Allow: /page"),
        ("Disallow: /page", "Allow: /pag*"),
    ],
)
def test_allow_wins_a_tie(lines: tuple[str, str]) -> None:
    rules = group(*lines)
    assert rules.allowed("/page", "MyBot") is True
    assert rules.decide("/page", "MyBot").rule is not None


@pytest.mark.parametrize(
    ("allow", "disallow", "path", "expected"),
    [
        # Google's documented "order of precedence" examples.
        ("/p", "/", "/page", True),
        ("/folder", "/folder", "/folder/page", True),
        ("/page", "/*.htm", "/page.htm", False),
        ("/page", "/*.ph", "/page.php5", True),
        ("/$", "/", "/", True),
        ("/$", "/", "/page.htm", False),
    ],
)
def test_google_precedence_examples(allow: str, disallow: str, path: str, expected: bool) -> None:
    rules = group(f"Allow: {allow}", f"Disallow: {disallow}")
    assert rules.allowed(f"https://example.com{path}", "MyBot") is expected


def test_priority_counts_the_wildcards_too() -> None:
    # "/a*" (3 octets) is longer than "/a" (2): the allow wins.
    rules = group("Disallow: /a", "Allow: /a*")
    assert rules.allowed("/ab", "MyBot") is True
    rules = group("Allow: /a", "Disallow: /a*")
    assert rules.allowed("/ab", "MyBot") is False


def test_rfc_5_1_simple_example() -> None:
    body = """\
User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
"""
    rules = RobotsTxt.parse(body)
    anyone = "OtherBot/1.0"
    assert rules.allowed("/publications/report", anyone) is True
    assert rules.allowed("/example/", anyone) is False
    assert rules.allowed("/example/page.html", anyone) is False
    assert rules.allowed("/images/a.gif", anyone) is False
    assert rules.allowed("/images/a.gif?x=1", anyone) is True  # "$": the URL does not end there
    assert rules.allowed("/publications/a.gif", anyone) is True  # the longer Allow wins
    assert rules.allowed("/", anyone) is True

    assert rules.allowed("/example/page.html", "foobot") is True
    assert rules.allowed("/example/allowed.gif", "foobot") is True
    assert rules.allowed("/example/disallowed.gif", "foobot") is False
    assert rules.allowed("/", "foobot") is False
    assert rules.allowed("/publications/", "foobot") is False

    for bot in ("barbot", "bazbot"):
        assert rules.allowed("/example/page.html", bot) is False
        assert rules.allowed("/example/page.html?x", bot) is False
        assert rules.allowed("/example/other.html", bot) is True
        assert rules.allowed("/a.gif", bot) is True  # the "*" group is not theirs

    for path in ("/", "/example/page.html", "/a.gif", "/publications/"):
        assert rules.allowed(path, "quxbot") is True


# -- Google: an allowed /dir/index.html allows /dir/ -----------------------------


@pytest.mark.parametrize("index", ["index.html", "index.htm"])
def test_allowed_index_html_allows_its_directory(index: str) -> None:
    rules = group(f"Allow: /dir/{index}", "Disallow: /dir/")
    assert rules.allowed(f"/dir/{index}", "MyBot") is True
    assert rules.allowed("/dir/", "MyBot") is True
    assert rules.allowed("/dir/other.html", "MyBot") is False
    assert rules.allowed("/dir/?q=1", "MyBot") is False  # only "/dir/" exactly


def test_allowed_root_index_html_allows_root() -> None:
    rules = group("Allow: /index.html", "Disallow: /")
    assert rules.allowed("/", "MyBot") is True
    assert rules.allowed("/x", "MyBot") is False


def test_disallowed_index_html_does_not_disallow_its_directory() -> None:
    rules = group("Disallow: /dir/index.html")
    assert rules.allowed("/dir/", "MyBot") is True


# -- the path: path plus query ----------------------------------------------------


def test_query_is_part_of_the_path() -> None:
    rules = group("Disallow: /*?", "Disallow: /cart?add")
    assert rules.allowed("/search?q=x", "MyBot") is False
    assert rules.allowed("/search", "MyBot") is True
    assert rules.allowed("https://example.com/cart?add=1", "MyBot") is False


def test_fragment_is_not_part_of_the_path() -> None:
    rules = group("Disallow: /*top")
    assert rules.allowed("https://example.com/page#top", "MyBot") is True
    assert rules.allowed("/page#top", "MyBot") is True


def test_url_without_path_is_the_root() -> None:
    rules = group("Disallow: /$")
    assert rules.allowed("https://example.com", "MyBot") is False
    assert rules.allowed("https://example.com?x=1", "MyBot") is True


# -- percent-encoding (RFC 9309 2.2.2 table) ---------------------------------------


@pytest.mark.parametrize(
    ("pattern", "url"),
    [
        ("/foo/bar?baz=quz", "/foo/bar?baz=quz"),
        ("/foo/bar?baz=https://foo.bar", "/foo/bar?baz=https://foo.bar"),
        (
            "/foo/bar?baz=https%3A%2F%2Ffoo.bar",
            "/foo/bar?baz=https%3A%2F%2Ffoo.bar",
        ),
        ("/foo/bar/ツ", "/foo/bar/%E3%83%84"),
        ("/foo/bar/ツ", "/foo/bar/ツ"),
        ("/foo/bar/ツ", "/foo/bar/%e3%83%84"),
        ("/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%E3%83%84", "/foo/bar/ツ"),
        ("/foo/bar/%e3%83%84", "https://example.com/foo/bar/ツ"),
        ("/foo/bar/%62%61%7A", "/foo/bar/baz"),
        ("/foo/bar/baz", "/foo/bar/%62%61%7A"),
        ("/foo/bar/%62%61%7a", "/foo/bar/%62%61%7A"),
        ("/%7Euser/", "/~user/"),
        ("/a%2fb", "/a%2Fb"),
        ("/caf%C3%A9", "/café"),
        # What no URI holds as such: every client sends it encoded, so both spellings
        # are judged as the one that goes out.
        ("/a%20b", "/a b"),
        ("/a%7Cb", "/a|b"),
        ("/%7Bid%7D", "/{id}"),
        ("/%22q%22", '/"q"'),
        ("/a{b}", "/a%7Bb%7D"),
    ],
)
def test_percent_encoding_normalisation(pattern: str, url: str) -> None:
    rules = group(f"Disallow: {pattern}")
    assert rules.allowed(url, "MyBot") is False
    assert rules.decide(url, "MyBot").allowed is False


@pytest.mark.parametrize(
    ("pattern", "url"),
    [
        ("/a%2Fb", "/a/b"),  # an encoded "/" is not a "/"
        ("/a/b", "/a%2Fb"),
        ("/a%3Fb", "/a?b"),
        ("/foo/bar/%E3%83%85", "/foo/bar/ツ"),
    ],
)
def test_encoded_reserved_characters_stay_distinct(pattern: str, url: str) -> None:
    assert group(f"Disallow: {pattern}").allowed(url, "MyBot") is True


def test_raw_non_ascii_in_a_bytes_body_is_utf8() -> None:
    rules = RobotsTxt.parse("User-agent: *\nDisallow: /ünïcödé\n".encode())
    assert rules.allowed("/%C3%BCn%C3%AFc%C3%B6d%C3%A9/x", "MyBot") is False
    assert rules.allowed("/ünïcödé", "MyBot") is False


# -- special characters (RFC 9309 2.2.3) ------------------------------------------


def test_rfc_2_2_3_end_of_pattern() -> None:
    rules = group("Disallow: /", "Allow: /this/path/exactly$")
    assert rules.allowed("/this/path/exactly", "MyBot") is True
    assert rules.allowed("/this/path/exactly/", "MyBot") is False
    assert rules.allowed("/this/path/exactly?x", "MyBot") is False
    assert rules.allowed("/this/path/exactl", "MyBot") is False


def test_rfc_2_2_3_any_characters() -> None:
    rules = group("Disallow: /", "Allow: /this/*/exactly")
    assert rules.allowed("/this/a/exactly", "MyBot") is True
    assert rules.allowed("/this/a/b/c/exactly/more", "MyBot") is True
    assert rules.allowed("/this//exactly", "MyBot") is True
    assert rules.allowed("/this/exactly", "MyBot") is False


def test_rfc_2_2_3_comments() -> None:
    rules = RobotsTxt.parse(
        "User-agent: *\nallow: / # comment in line\n\n# comment on its own line\n"
    )
    assert rules.allowed("/", "MyBot") is True
    assert rules.decide("/", "MyBot").rule == Rule(True, "/", 2)


@pytest.mark.parametrize(
    ("pattern", "url"),
    [
        ("/path/file-with-a-%2A.html", "https://www.example.com/path/file-with-a-*.html"),
        ("/path/foo-%24", "https://www.example.com/path/foo-$"),
        ("/path/file-with-a-%2a.html", "/path/file-with-a-%2A.html"),
    ],
)
def test_rfc_2_2_3_encoded_special_characters_match_them_literally(pattern: str, url: str) -> None:
    rules = group(f"Disallow: {pattern}")
    assert rules.allowed(url, "MyBot") is False


def test_encoded_star_is_not_a_wildcard() -> None:
    rules = group("Disallow: /a%2Ab")
    assert rules.allowed("/axxb", "MyBot") is True
    assert rules.allowed("/a*b", "MyBot") is False


def test_dollar_inside_a_pattern_is_literal() -> None:
    rules = group("Disallow: /api?$filter", "Disallow: /x$y$")
    assert rules.allowed("/api?$filter=name", "MyBot") is False
    assert rules.allowed("/api?filter=name", "MyBot") is True
    assert rules.allowed("/x$y", "MyBot") is False
    assert rules.allowed("/x$yz", "MyBot") is True


@pytest.mark.parametrize(
    ("pattern", "matching", "not_matching"),
    [
        # Google's documented path-matching examples.
        ("/", ["/", "/a", "/a/b?c"], []),
        ("/*", ["/", "/a", "/a/b?c"], []),
        ("/$", ["/"], ["/a", "/?x"]),
        (
            "/fish*",
            ["/fish", "/fish.html", "/fish/salmon.html", "/fishheads", "/fish.php?id=1"],
            ["/Fish.asp", "/catfish", "/?id=fish", "/desert/fish"],
        ),
        (
            "/fish/",
            ["/fish/", "/fish/?id=anything", "/fish/salmon.htm"],
            ["/fish", "/fish.html", "/animals/fish/", "/Fish/Salmon.asp"],
        ),
        (
            "/*.php",
            [
                "/index.php",
                "/filename.php",
                "/folder/filename.php",
                "/folder/filename.php?parameters",
                "/folder/any.php.file.html",
                "/filename.php/",
            ],
            ["/", "/windows.PHP"],
        ),
        (
            "/*.php$",
            ["/filename.php", "/folder/filename.php"],
            ["/filename.php?parameters", "/filename.php/", "/filename.php5", "/windows.PHP"],
        ),
        (
            "/fish*.php",
            ["/fish.php", "/fishheads/catfish.php?parameters"],
            ["/Fish.PHP"],
        ),
        ("*.gif$", ["/a.gif", "/x/y.gif"], ["/a.gif?x", "/a.gifs"]),
        ("/a**b", ["/ab", "/axb", "/axxxb"], ["/a"]),
        ("/a*$", ["/a", "/abc"], ["/b"]),
        ("/*a*a*a", ["/aaa", "/xaxaxa/"], ["/aa", "/"]),
    ],
)
def test_wildcards(pattern: str, matching: list[str], not_matching: list[str]) -> None:
    rules = group(f"Disallow: {pattern}")
    for path in matching:
        assert rules.allowed(path, "MyBot") is False, path
        assert rules.decide(path, "MyBot").rule == Rule(False, pattern, 2)
    for path in not_matching:
        assert rules.allowed(path, "MyBot") is True, path


def test_pattern_not_starting_with_slash() -> None:
    # Such a pattern can only match through a leading "*".
    rules = group("Disallow: fish", "Disallow: *salmon")
    assert rules.allowed("/fish", "MyBot") is True
    assert rules.allowed("/smoked-salmon", "MyBot") is False


def test_a_lone_dollar_matches_nothing() -> None:
    assert group("Disallow: $").allowed("/", "MyBot") is True


def test_star_alone_matches_everything() -> None:
    rules = group("Disallow: *")
    assert rules.allowed("/", "MyBot") is False
    assert rules.allowed("/a?b", "MyBot") is False
