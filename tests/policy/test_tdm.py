"""policy/tdm.py: the TDMRep verdict from tdmrep.json's fetch outcome and the page's own say."""

from __future__ import annotations

import json

from robotgate.policy import FetchPolicy
from robotgate.policy.fetch import entry_for_error, entry_for_response
from robotgate.policy.tdm import tdm_verdict
from robotgate.robots.directives import page_directives
from robotgate.robots.tdmrep import parse_tdmrep_json

ORIGIN = "https://provider.com"
FILE_POLICY = "https://provider.com/policies/policy.json"
PAGE_POLICY = "https://provider.com/policies/page.json"
BODY = json.dumps([{"location": "/", "tdm-reservation": 1, "tdm-policy": FILE_POLICY}]).encode()
OK = entry_for_response(ORIGIN, 200, {}, BODY, 0.0, FetchPolicy())
FILE = parse_tdmrep_json(BODY)


def test_a_page_that_reserves_without_a_policy_keeps_the_files() -> None:
    page = page_directives({"tdm-reservation": "1"}, agent="MineBot/1.0")
    verdict = tdm_verdict(ORIGIN + "/a", OK, FILE, page)
    assert (verdict.reserved, verdict.policy) == (True, FILE_POLICY)
    assert "tdm-reservation: 1" in verdict.source


def test_the_page_overrides_the_file_and_its_policy_wins() -> None:
    page = page_directives({"tdm-reservation": "1", "tdm-policy": PAGE_POLICY},
                           agent="MineBot/1.0")
    assert tdm_verdict(ORIGIN + "/a", OK, FILE, page).policy == PAGE_POLICY
    lifted = page_directives({"tdm-reservation": "0"}, agent="MineBot/1.0")
    verdict = tdm_verdict(ORIGIN + "/a", OK, FILE, lifted)
    assert (verdict.reserved, verdict.policy) == (False, None)
    assert verdict.source.endswith("(the page's own statement overrides tdmrep.json)")


def test_fetch_outcomes_mean_what_they_mean_for_robots_txt() -> None:
    missing = entry_for_response(ORIGIN, 404, {}, None, 0.0, FetchPolicy())
    verdict = tdm_verdict(ORIGIN + "/a", missing, None)
    assert verdict.reserved is None
    assert verdict.source == ("tdmrep.json answered 404: no /.well-known/tdmrep.json; "
                              "the page was not read")
    down = entry_for_error(ORIGIN, "robots.txt answered 500", 0.0, FetchPolicy(), status=500)
    verdict = tdm_verdict(ORIGIN + "/a", down, None)
    assert verdict.reserved is True and "unreachable" in verdict.source
    assert "robots.txt" not in verdict.source.split("(as RFC")[0]


def test_a_broken_file_says_what_is_wrong_with_it() -> None:
    verdict = tdm_verdict(ORIGIN + "/a", OK, parse_tdmrep_json(b"{}"))
    assert verdict.reserved is None
    assert verdict.source.startswith(f"{ORIGIN}/.well-known/tdmrep.json: not a JSON array")


def test_without_tdmrep_only_the_page_speaks() -> None:
    assert tdm_verdict(ORIGIN + "/a", None, None).source == "the page was not read"
    page = page_directives({"tdm-reservation": "1"}, agent="MineBot/1.0")
    verdict = tdm_verdict(ORIGIN + "/a", None, None, page)
    assert verdict.reserved is True and "overrides" not in verdict.source
    assert verdict.as_json() == {"reserved": True, "policy": None, "source": verdict.source}
