"""policy/tdm.py: the TDMRep verdict from tdmrep.json's fetch outcome and the page's own say."""

from __future__ import annotations

import json

import pytest

from robotgate.policy import FetchPolicy
from robotgate.policy.fetch import entry_for_error, entry_for_response
from robotgate.policy.fetch_flow import RobotsResponse, robots_flow
from robotgate.policy.tdm import TDMREP_PATH, tdm_verdict
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
    missing = entry_for_response(ORIGIN, 404, {}, None, 0.0, FetchPolicy(), name="tdmrep.json")
    verdict = tdm_verdict(ORIGIN + "/a", missing, None)
    assert verdict.reserved is None
    assert verdict.source == ("tdmrep.json answered 404: no /.well-known/tdmrep.json; "
                              "the page was not read")


def test_an_unreachable_file_says_nothing_and_the_page_decides() -> None:
    # W3C TDMRep: a server that gives no file, whatever the reason, does not
    # implement the protocol; the reservation is unset, not assumed.
    down = entry_for_error(ORIGIN, "tdmrep.json answered 500", 0.0, FetchPolicy(), status=500)
    verdict = tdm_verdict(ORIGIN + "/a", down, None)
    assert verdict.reserved is None and verdict.policy is None
    assert verdict.source.startswith("tdmrep.json answered 500: tdmrep.json is unreachable")
    assert "robots.txt" not in verdict.source
    page = page_directives({"tdm-reservation": "1"}, agent="MineBot/1.0")
    assert tdm_verdict(ORIGIN + "/a", down, None, page).reserved is True
    # An earlier good copy stands in, and the verdict says why.
    stale = entry_for_error(ORIGIN, "tdmrep.json answered 503", 10.0, FetchPolicy(), OK)
    verdict = tdm_verdict(ORIGIN + "/a", stale, FILE)
    assert (verdict.reserved, verdict.policy) == (True, FILE_POLICY)
    assert "(tdmrep.json answered 503; using the copy fetched at" in verdict.source


def test_the_verdict_gives_the_fetchs_account_as_it_is() -> None:
    # The account names the file fetched, and quotes a redirect's target unchanged.
    flow = robots_flow(ORIGIN, None, FetchPolicy(), 0.0, path=TDMREP_PATH)
    next(flow)
    loop = RobotsResponse(301, {"Location": "/old/robots.txt"})
    flow.send(loop)
    with pytest.raises(StopIteration) as done:
        flow.send(loop)
    verdict = tdm_verdict(ORIGIN + "/a", done.value.value, None)
    assert verdict.reserved is None
    assert verdict.source.startswith(
        f"tdmrep.json redirect loop at {ORIGIN}/old/robots.txt: no {TDMREP_PATH}")


def test_a_page_naming_only_a_policy_gives_it_to_the_files_reservation() -> None:
    # "The absence of tdm-reservation and tdm-policy must not reset current
    # values": the page's header supersedes the file's policy alone.
    page = page_directives({"tdm-policy": PAGE_POLICY}, agent="MineBot/1.0")
    assert (page.tdm_reservation, page.tdm_policy) == (None, PAGE_POLICY)
    verdict = tdm_verdict(ORIGIN + "/a", OK, FILE, page)
    assert (verdict.reserved, verdict.policy) == (True, PAGE_POLICY)
    assert verdict.source.endswith("the policy is the page's tdm-policy")
    # Without a reservation from anywhere, a policy alone reserves nothing.
    missing = entry_for_response(ORIGIN, 404, {}, None, 0.0, FetchPolicy())
    verdict = tdm_verdict(ORIGIN + "/a", missing, None, page)
    assert (verdict.reserved, verdict.policy) == (None, None)


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
