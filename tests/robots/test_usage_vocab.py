"""AI usage preferences, the statements themselves: the RFC 9651 Dictionary parser,
the AIPREF vocabulary's processing (draft-ietf-aipref-vocab), the ``Content-Usage``
HTTP header, combining, and Cloudflare's ``Content-Signal``."""

from __future__ import annotations

import email.message
from types import MappingProxyType

import pytest

from robotgate.decision import Decision, UsageRule
from robotgate.robots.usage import (
    VOCABULARY,
    Date,
    DisplayString,
    Token,
    combine_usage,
    content_signal_from_headers,
    field_values,
    parse_content_signal,
    parse_dictionary,
    parse_usage,
    split_rule_value,
    usage_from_headers,
)

# -- RFC 9651 Dictionaries: the RFC's own kinds of example, written out here --------


def test_strings_and_byte_sequences() -> None:
    d = parse_dictionary('en="Applepie", da=:w4ZibGV0w6ZydGU=:')
    assert d == {"en": ("Applepie", {}), "da": ("Æblet\u00e6rte".encode(), {})}
    assert not isinstance(d["en"][0], Token)


def test_booleans_bare_keys_and_parameters() -> None:
    d = parse_dictionary("a=?0, b, c; foo=bar")
    assert d == {"a": (False, {}), "b": (True, {}), "c": (True, {"foo": Token("bar")})}
    assert isinstance(d["c"][1]["foo"], Token)


def test_decimals_and_inner_lists() -> None:
    d = parse_dictionary("rating=1.5, feelings=(joy sadness)")
    assert d == {
        "rating": (1.5, {}),
        "feelings": (((Token("joy"), {}), (Token("sadness"), {})), {}),
    }


def test_inner_lists_with_parameters() -> None:
    d = parse_dictionary("a=(1 2), b=3, c=4;aa=bb, d=(5 6);valid")
    assert d == {
        "a": (((1, {}), (2, {})), {}),
        "b": (3, {}),
        "c": (4, {"aa": Token("bb")}),
        "d": (((5, {}), (6, {})), {"valid": True}),
    }
    assert parse_dictionary("a=()") == {"a": ((), {})}
    assert parse_dictionary("a=( 1  2 );x") == {"a": (((1, {}), (2, {})), {"x": True})}


def test_dates_and_display_strings() -> None:
    d = parse_dictionary('when=@1659578233, msg=%"caf%c3%a9 for %e2%82%ac1"')
    assert d == {"when": (1659578233, {}), "msg": ("café for €1", {})}
    assert isinstance(d["when"][0], Date)
    assert isinstance(d["msg"][0], DisplayString)


def test_a_repeated_key_keeps_its_last_value_in_its_first_place() -> None:
    assert list(parse_dictionary("a=1, b=2, a=3").items()) == [("a", (3, {})), ("b", (2, {}))]


def test_whitespace() -> None:
    same = {"a": (1, {}), "b": (2, {})}
    for text in ("a=1,b=2", "a=1 , b=2", "a=1,\tb=2", "  a=1, b=2  ", "a=1\t,b=2"):
        assert parse_dictionary(text) == same, text
    assert parse_dictionary("") == {}
    assert parse_dictionary("   ") == {}
    assert parse_dictionary("a;  p=1") == {"a": (True, {"p": 1})}


def test_strings_unescape_quotes_and_backslashes() -> None:
    assert parse_dictionary(r'a="x\"y\\z"') == {"a": ('x"y\\z', {})}


def test_tokens_keep_colons_slashes_and_case() -> None:
    assert parse_dictionary("a=text/html:Y*") == {"a": (Token("text/html:Y*"), {})}


def test_numbers_at_their_limits() -> None:
    assert parse_dictionary("a=-999999999999999") == {"a": (-999999999999999, {})}
    assert parse_dictionary("a=999999999999.999") == {"a": (999999999999.999, {})}
    assert parse_dictionary("a=007") == {"a": (7, {})}


def test_bytes_input_and_unpadded_base64() -> None:
    assert parse_dictionary(b"a=:aGk:") == {"a": (b"hi", {})}


@pytest.mark.parametrize(
    "text",
    [
        "A=1",  # keys are lowercase
        "a=1;B=2",
        "1a=1",
        "a=1,",  # trailing comma
        "a=1,,b=2",
        ",a=1",
        "\ta=1",  # only SP is trimmed around the field
        "a= 1",  # nothing between = and the value
        "a =1",
        "a=1 ;p",  # nor before a parameter
        "a=1 b=2",
        'a="unterminated',
        'a="bad \\x escape"',
        'a="tab\tinside"',
        "a=é",  # not ASCII
        "a=1234567890123456",  # 16 digits
        "a=1234567890123.4",  # 13 before the point
        "a=1.2345",
        "a=1.",
        "a=-",
        "a=?2",
        "a=?",
        "a=:not base64!:",
        "a=:a:",
        "a=:====:",
        "a=@1.5",
        'a=%"caf%C3%A9"',  # display strings use lowercase hex
        'a=%"%ff"',  # and UTF-8
        "a=(1 2",
        "a=(1,2)",
        "a=(1\t2)",
        "a=#",
        "a=1;",
        'train-ai;has;parameters="?";',  # the vocabulary draft's example ends in ";"
    ],
)
def test_what_fails_to_parse(text: str) -> None:
    with pytest.raises(ValueError):
        parse_dictionary(text)


# -- the vocabulary -------------------------------------------------------------


def test_the_vocabulary() -> None:
    assert VOCABULARY == ("train-ai", "search")


def test_y_and_n() -> None:
    assert parse_usage("train-ai=n") == {"train-ai": False}
    assert parse_usage("train-ai=y, search=n") == {"train-ai": True, "search": False}


def test_several_labels() -> None:
    assert parse_usage("search=y, train-ai=y") == {"train-ai": True, "search": True}


def test_labels_of_earlier_drafts_are_unknown_and_ignored() -> None:
    # vocab-07 6.4: unknown labels MUST be ignored; ai-use was vocab-02's.
    assert parse_usage("ai-use=n, train-ai=y") == {"train-ai": True}
    assert parse_usage("ai-use=n") == {}


def test_a_repeated_label_keeps_its_last_value() -> None:
    assert parse_usage("train-ai=n, train-ai=y") == {"train-ai": True}
    # The draft's example: the last values are a boolean and a string, so unknown.
    assert parse_usage('train-ai=y, train-ai, search=n, search="n"') == {}


def test_an_uppercase_key_makes_everything_unknown() -> None:
    assert parse_usage("train-ai=n, Search=y") == {}
    assert parse_usage("TRAIN-AI=n") == {}


def test_values_other_than_the_tokens_y_and_n_are_unknown() -> None:
    for value in ('"n"', "?0", "?1", "0", "1", "(n)", "yes", "no", "Y", "N", ":bg==:", "@0"):
        assert parse_usage(f"train-ai={value}, search=n") == {"search": False}, value
    assert parse_usage("train-ai, search=n") == {"search": False}  # bare key: true


def test_parameters_are_ignored() -> None:
    assert parse_usage("train-ai=n;src=site;v=2") == {"train-ai": False}
    # Only the last value's parameters remain, and they mean nothing.
    assert parse_usage("train-ai;allow=n, train-ai=y") == {"train-ai": True}
    assert parse_usage('train-ai=?1;has;parameters="?"') == {}


def test_unknown_labels_are_ignored() -> None:
    assert parse_usage("foo=n, train-genai=n, bots.example=y, train-ai=y") == {"train-ai": True}


def test_a_statement_that_fails_to_parse_says_nothing() -> None:
    assert parse_usage("train-ai=n,") == {}
    assert parse_usage("train-ai = n") == {}
    assert parse_usage("") == {}
    assert parse_usage(b"train-ai=n") == {"train-ai": False}


def test_parse_usage_returns_a_fresh_dict() -> None:
    first = parse_usage("train-ai=n")
    first["search"] = True
    assert parse_usage("train-ai=n") == {"train-ai": False}


def test_a_long_header_is_read_but_not_kept_in_the_cache() -> None:
    # Hostile 1 MB headers would otherwise fill the cache to hundreds of MB.
    from robotgate.robots.usage import _usage

    _usage.cache_clear()
    long = "train-ai=n, " + ", ".join(f"x{i}=y" for i in range(20_000))
    assert usage_from_headers({"Content-Usage": long}) == {"train-ai": False}
    assert parse_usage("search=y") == {"search": True}
    assert _usage.cache_info().currsize == 1


# -- combining -------------------------------------------------------------------


def test_combining_the_most_restrictive_wins() -> None:
    assert combine_usage({"train-ai": True}, {"train-ai": False}) == {"train-ai": False}
    assert combine_usage({"train-ai": False}, {"train-ai": True}) == {"train-ai": False}
    assert combine_usage({"train-ai": True}, {}) == {"train-ai": True}
    assert combine_usage({"search": True}, {"train-ai": False}) == {
        "search": True,
        "train-ai": False,
    }
    assert combine_usage() == {}
    assert combine_usage(MappingProxyType({"search": False})) == {"search": False}


# -- the HTTP header ----------------------------------------------------------------


def test_the_header_in_a_plain_mapping_any_case() -> None:
    assert usage_from_headers({"Content-Usage": "train-ai=n"}) == {"train-ai": False}
    assert usage_from_headers({"content-usage": "search=y"}) == {"search": True}
    assert usage_from_headers({"Content-Type": "text/html"}) == {}


def test_several_header_lines_are_one_field() -> None:
    # Joined with commas before parsing: the last value of a label wins ...
    pairs = [("Content-Usage", "train-ai=y"), ("content-usage", "train-ai=n, search=y")]
    assert usage_from_headers(pairs) == {"train-ai": False, "search": True}
    pairs = [("Content-Usage", "train-ai=n"), ("Content-Usage", "train-ai=y")]
    assert usage_from_headers(pairs) == {"train-ai": True}
    # ... and one bad line spoils the field; empty lines are skipped.
    assert usage_from_headers([("Content-Usage", "train-ai=n"), ("Content-Usage", "X=1")]) == {}
    assert usage_from_headers([("Content-Usage", "train-ai=n"), ("Content-Usage", " ")]) == {
        "train-ai": False
    }


def test_the_header_in_multidicts() -> None:
    multidict = pytest.importorskip("multidict")
    h = multidict.CIMultiDict([("Content-Usage", "train-ai=y"), ("content-usage", "search=n")])
    assert usage_from_headers(h) == {"train-ai": True, "search": False}
    assert usage_from_headers(multidict.CIMultiDictProxy(h)) == {"train-ai": True, "search": False}
    msg = email.message.Message()
    msg["Content-Usage"] = "train-ai=n"
    msg["Content-Usage"] = "search=y"
    assert usage_from_headers(msg) == {"train-ai": False, "search": True}


def test_field_values_of_other_header_shapes() -> None:
    class Listing:  # like Scrapy's Headers: bytes, getlist
        def getlist(self, name: str) -> list[bytes]:
            return [b"train-ai=n"] if name.lower() == "content-usage" else []

    class Httpx:
        def get_list(self, name: str) -> list[str]:
            return ["search=y"]

    assert field_values(Listing(), "Content-Usage") == ["train-ai=n"]
    assert usage_from_headers(Listing()) == {"train-ai": False}
    assert usage_from_headers(Httpx()) == {"search": True}
    assert field_values({b"Content-Usage": b"x"}, "content-usage") == ["x"]


def test_header_and_robots_txt_combine() -> None:
    robots = {"train-ai": True, "search": True}
    header = usage_from_headers({"Content-Usage": "train-ai=n"})
    assert combine_usage(robots, header) == {"train-ai": False, "search": True}


# -- Content-Signal ---------------------------------------------------------------------


def test_content_signal_labels_as_written() -> None:
    assert parse_content_signal("search=yes, ai-train=no, ai-input=no") == {
        "search": True,
        "ai-train": False,
        "ai-input": False,
    }
    assert parse_content_signal("Search=YES,ai-train = No") == {"search": True, "ai-train": False}


def test_content_signal_ignores_what_it_cannot_read() -> None:
    assert parse_content_signal("search=maybe, ai-train, =no, a b=no, ai-input=y") == {}
    assert parse_content_signal("") == {}
    assert parse_content_signal("ai-train=no, ai-train=yes") == {"ai-train": True}
    assert parse_content_signal("ai-train=no, ai-train=perhaps") == {"ai-train": False}


def test_content_signal_header_lines_combine() -> None:
    pairs = [("Content-Signal", "ai-train=yes, search=yes"), ("content-signal", "ai-train=no")]
    assert content_signal_from_headers(pairs) == {"ai-train": False, "search": True}
    assert content_signal_from_headers({}) == {}


# -- rule values, and how a decision says it -------------------------------------------


def test_rule_values_split_into_path_and_statement() -> None:
    assert split_rule_value("/ai-ok/ train-ai=y") == ("/ai-ok/", "train-ai=y")
    assert split_rule_value("/a\t\ttrain-ai=y, search=n") == ("/a", "train-ai=y, search=n")
    assert split_rule_value("train-ai=n") == ("", "train-ai=n")
    assert split_rule_value("*.pdf train-ai=n") == ("", "*.pdf train-ai=n")
    assert split_rule_value("/only-a-path") == ("/only-a-path", "")
    assert split_rule_value("") == ("", "")


def test_a_decision_without_usage_reads_as_before() -> None:
    d = Decision(True, "allowed: no rule matches in the group for '*'")
    assert str(d) == d.reason
    assert d.usage == {} and d.signals == {}
    assert d.usage_reason is None
    assert hash(d) == hash(Decision(True, d.reason))
    assert Decision(True, "x", None, None, None) == Decision(True, "x")


def test_a_decision_names_its_usage_rules() -> None:
    rules = (UsageRule("/a", "train-ai=n", 4), UsageRule("/a", "search=y", 6))
    signal = (UsageRule("", "search=yes", 2, "Content-Signal"),)
    d = Decision(
        True,
        "allowed by 'Allow: /' (line 3) in the group for '*'",
        usage=MappingProxyType({"train-ai": False, "search": True}),
        usage_rules=rules,
        signals=MappingProxyType({"search": True}),
        signal_rules=signal,
    )
    assert str(d) == (
        "allowed by 'Allow: /' (line 3) in the group for '*'; "
        "usage train-ai=n, search=y by 'Content-Usage: /a train-ai=n' (line 4) "
        "and 'Content-Usage: /a search=y' (line 6); "
        "signals search=yes by 'Content-Signal: search=yes' (line 2)"
    )
    assert hash(d) == hash(Decision(True, d.reason, usage_rules=rules, signal_rules=signal))
    assert str(rules[0]) == "Content-Usage: /a train-ai=n (line 4)"


def test_a_rule_that_says_nothing_known_is_still_named() -> None:
    d = Decision(True, "allowed", usage_rules=(UsageRule("", 'train-ai="n"', 3),))
    assert str(d) == "allowed; usage unknown by 'Content-Usage: train-ai=\"n\"' (line 3)"
