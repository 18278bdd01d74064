"""``/.well-known/tdmrep.json`` (W3C TDM Reservation Protocol): the report's examples,
first-match-wins, robots.txt-style patterns, and bad files answered, never raised."""

from __future__ import annotations

import json

import pytest

from robotgate.robots import tdmrep
from robotgate.robots.tdmrep import MAX_RULES, TdmRep, TdmRepRule, parse_tdmrep_json

POLICY = "https://provider.com/policies/policy.json"


def test_the_reports_site_wide_opt_out() -> None:
    rep = parse_tdmrep_json(b'[\n  {\n  "location": "/",\n  "tdm-reservation": 1\n  }\n]')
    assert rep == TdmRep((TdmRepRule("/", True, None),), None)
    for path in ("/", "/a/b.html?q=1", "https://provider.com/x.pdf"):
        assert rep.for_path(path) == TdmRepRule("/", True, None)


def test_the_reports_three_groups() -> None:
    rep = parse_tdmrep_json(json.dumps([
        {"location": "/directory-a/", "tdm-reservation": 1},
        {"location": "/directory-b/html/", "tdm-reservation": 1, "tdm-policy": POLICY},
        {"location": "/directory-b/images/*.jpg", "tdm-reservation": 0},
    ]).encode())
    assert rep.problem is None
    a, b, images = rep.rules
    assert rep.for_path("/directory-a/paper.pdf") is a
    assert rep.for_path("/directory-b/html/page.html") is b and b.policy == POLICY
    assert rep.for_path("/directory-b/images/2024/photo.jpg") is images
    assert not images.reserved
    # No rule matches: the reservation is unset.
    assert rep.for_path("/directory-b/images/photo.png") is None
    assert rep.for_path("/directory-c/") is None


def test_the_first_match_wins_not_the_longest() -> None:
    rules = [{"location": "/", "tdm-reservation": 1},
             {"location": "/open/", "tdm-reservation": 0}]
    rep = parse_tdmrep_json(json.dumps(rules).encode())
    assert rep.for_path("/open/x") == TdmRepRule("/", True)
    rep = parse_tdmrep_json(json.dumps(rules[::-1]).encode())
    assert rep.for_path("/open/x") == TdmRepRule("/open/", False)
    assert rep.for_path("/closed/x") == TdmRepRule("/", True)


def test_patterns_match_as_robots_txt_paths_do() -> None:
    rep = TdmRep((
        TdmRepRule("/this/path/exactly$", True),
        TdmRepRule("/this/*/then", False),
        TdmRepRule("/path/foo-%24", True, POLICY),
        TdmRepRule("/caf\u00e9/", True),
    ))
    assert rep.for_path("/this/path/exactly") == rep.rules[0]
    assert rep.for_path("/this/path/exactly/not") is None
    assert rep.for_path("/this/is/then/some") == rep.rules[1]
    assert rep.for_path("https://provider.com/path/foo-$") == rep.rules[2]
    assert rep.for_path("/caf%C3%A9/menu") == rep.rules[3]
    assert rep.for_path("/%7Ethis/x") is None
    # Case-sensitive, as the report asks.
    assert rep.for_path("/THIS/path/exactly") is None


def test_values_as_strings_and_policy_kept() -> None:
    rep = parse_tdmrep_json(
        b'[{"location": "/a", "tdm-reservation": "1", "tdm-policy": " https://p/x "}]')
    assert rep.rules == (TdmRepRule("/a", True, "https://p/x"),)


def test_bad_rules_are_left_out_and_named() -> None:
    rep = parse_tdmrep_json(json.dumps([
        {"location": "/ok", "tdm-reservation": 0},
        "not a rule",
        {"tdm-reservation": 1},
        {"location": "/x", "tdm-reservation": 2},
        {"location": "/y", "tdm-reservation": True},
        {"location": "", "tdm-reservation": 1},
        {"location": "/z", "tdm-reservation": 1, "tdm-policy": 7},
    ]).encode())
    assert rep.rules == (TdmRepRule("/ok", False), TdmRepRule("/z", True, None))
    assert rep.problem == (
        "rule 2: not an object but a string, left out; "
        "rule 3: no location (a non-empty string), left out; "
        "rule 4: tdm-reservation is not 0 or 1, left out; and 2 more"
    )


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"", "not JSON"),
        (b"User-agent: *", "not JSON"),
        (b"\xff\xfe[]", "not UTF-8"),
        (b"{}", "not a JSON array but an object"),
        (b'"/"', "not a JSON array but a string"),
        (b"null", "not a JSON array but null"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
        (b"[" + b"9" * 10_000 + b"]", "not JSON"),
    ],
)
def test_bad_files_give_no_rules_and_say_why(body: bytes, problem: str) -> None:
    rep = parse_tdmrep_json(body)
    assert rep.rules == ()
    assert rep.problem is not None and rep.problem.startswith(problem)
    assert rep.for_path("/") is None


def test_a_bom_is_allowed() -> None:
    rep = parse_tdmrep_json(b'\xef\xbb\xbf[{"location": "/", "tdm-reservation": 1}]')
    assert rep.problem is None and len(rep.rules) == 1


def test_size_and_rule_count_are_bounded() -> None:
    rule = {"location": "/", "tdm-reservation": 1}
    body = json.dumps([rule] * (MAX_RULES + 5)).encode()
    rep = parse_tdmrep_json(body)
    assert len(rep.rules) == MAX_RULES
    assert rep.problem == f"only the first {MAX_RULES} of {MAX_RULES + 5} rules are read"
    rep = parse_tdmrep_json(body, max_bytes=len(body) - 1)
    assert rep.rules == ()
    assert rep.problem == f"larger than {len(body) - 1} bytes: not read"


def test_hostile_patterns_against_long_paths() -> None:
    stars = "/" + "*a" * 2000
    path = "/" + "a" * 200_000
    assert TdmRep((TdmRepRule(stars + "b", True),)).for_path(path) is None
    assert TdmRep((TdmRepRule(stars + "$", True),)).for_path(path) == TdmRepRule(stars + "$",
                                                                                  True)


class _Undecided:
    """A rule set whose match the work bound left undecided."""

    def match_exact(self, path: str) -> tuple[int, bool]:
        return 0, False


def test_an_undecided_match_never_lifts_a_reservation(monkeypatch: pytest.MonkeyPatch) -> None:
    # Past the matcher's work bound a reserving rule counts as matching, a
    # non-reserving one as not.
    monkeypatch.setattr(tdmrep, "_compiled", lambda location: _Undecided())
    rep = TdmRep((TdmRepRule("/open/*", False), TdmRepRule("/*", True)))
    assert rep.for_path("/open/x") == TdmRepRule("/*", True)
