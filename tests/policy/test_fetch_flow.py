"""The robots.txt fetch as a pure generator (policy/fetch_flow.py): no I/O, no event loop.

Each test plays the server: it answers the requests the flow yields and checks
the entry the flow returns (RFC 9309 2.3).  What the entry means for the site
(rules, charset, size cap) is :func:`robotgate.policy.site.interpret`'s job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from robotgate.policy.fetch import FetchPolicy
from robotgate.policy.fetch_flow import (
    RobotsFlow,
    RobotsRequest,
    RobotsResponse,
    robots_flow,
)
from robotgate.policy.site import Interpretation, interpret
from robotgate.records import Outcome, RobotsEntry

AGENT = "FlowBot/1.0"
SITE = "http://site.example"
ROBOTS = SITE + "/robots.txt"
NOW = 1_700_000_000.0
RULES = b"User-agent: *\nDisallow: /x\n"

Server = Callable[[RobotsRequest], RobotsResponse]


def ok(body: bytes = RULES, headers: Mapping[str, str] | None = None) -> RobotsResponse:
    return RobotsResponse(200, dict(headers or {}), body)


def redirect(location: str, status: int = 301) -> RobotsResponse:
    return RobotsResponse(status, {"Location": location})


def status(code: int, headers: Mapping[str, str] | None = None) -> RobotsResponse:
    return RobotsResponse(code, dict(headers or {}))


def drive(flow: RobotsFlow, server: Server | dict[str, RobotsResponse],
          ) -> tuple[RobotsEntry, list[RobotsRequest]]:
    """Answer the flow's requests until it returns; the entry and the requests seen."""
    if isinstance(server, dict):
        table = server

        def from_table(request: RobotsRequest) -> RobotsResponse:
            return table[request.url]

        answer: Server = from_table
    else:
        answer = server
    requests: list[RobotsRequest] = []
    request = next(flow)
    while True:
        requests.append(request)
        assert len(requests) < 50, "the flow does not end"
        try:
            request = flow.send(answer(request))
        except StopIteration as done:
            return done.value, requests


def fetch(server: Server | dict[str, RobotsResponse], *, origin: str = SITE,
          previous: RobotsEntry | None = None, policy: FetchPolicy | None = None,
          ) -> tuple[RobotsEntry, list[RobotsRequest]]:
    return drive(robots_flow(origin, previous, policy or FetchPolicy(), NOW), server)


def chain(hops: int, final: RobotsResponse) -> dict[str, RobotsResponse]:
    """robots.txt -> /r1 -> ... -> /r<hops>, which answers ``final``."""
    server = {ROBOTS: redirect("/r1", 302)}
    for i in range(1, hops):
        server[f"{SITE}/r{i}"] = redirect(f"/r{i + 1}", 302)
    server[f"{SITE}/r{hops}"] = final
    return server


def site_of(entry: RobotsEntry, **how: object) -> object:
    return interpret(entry, Interpretation(AGENT, **how))  # type: ignore[arg-type]


# -- 2xx ---------------------------------------------------------------------------------


def test_2xx_gives_the_body_and_its_rules() -> None:
    entry, requests = fetch({ROBOTS: ok(RULES, {"ETag": '"v1"', "Content-Type": "text/plain"})})
    assert [r.url for r in requests] == [ROBOTS]
    assert requests[0].previous is None and dict(requests[0].headers) == {}
    assert requests[0].max_bytes == FetchPolicy().max_bytes
    assert entry.outcome == Outcome.OK and entry.status == 200 and entry.body == RULES
    assert entry.etag == '"v1"' and entry.final_url == ROBOTS
    assert entry.fetched_at == NOW and entry.fresh_until == NOW + FetchPolicy().freshness
    site = interpret(entry, Interpretation(AGENT))
    d = site.decide("/x/1", AGENT)
    assert not d.allowed and d.rule is not None and d.rule.line == 2
    assert site.allowed("/public", AGENT)


def test_the_request_asks_for_the_policy_cap() -> None:
    _, requests = fetch({ROBOTS: ok()}, policy=FetchPolicy(max_bytes=1000))
    assert requests[0].max_bytes == 1000


def test_a_body_past_max_bytes_is_not_parsed() -> None:
    # Reading at most max_bytes is the adapter's job; parsing past it is never done.
    filler = b"# " + b"x" * 100 + b"\n"
    body = b"User-agent: *\nDisallow: /early\n" + filler * 20 + b"Disallow: /late\n"
    policy = FetchPolicy(max_bytes=1000)
    entry, _ = fetch({ROBOTS: ok(body)}, policy=policy)
    site = interpret(entry, Interpretation(AGENT, fetch=policy))
    assert not site.allowed("/early", AGENT)
    assert site.allowed("/late", AGENT)


def test_clock_stamps_the_answer() -> None:
    times = iter([NOW + 5.0])
    flow = robots_flow(SITE, None, FetchPolicy(), NOW, clock=lambda: next(times))
    entry, _ = drive(flow, {ROBOTS: ok()})
    assert entry.fetched_at == NOW + 5.0


# -- redirects ---------------------------------------------------------------------------


def test_redirect_to_another_origin_is_followed() -> None:
    other = "http://cdn.example/robots.txt"
    entry, requests = fetch({ROBOTS: redirect(other), other: ok(b"User-agent: *\nDisallow: /\n")})
    assert [r.url for r in requests] == [ROBOTS, other]
    assert requests[1].previous == ROBOTS
    assert entry.origin == SITE and entry.final_url == other
    assert not interpret(entry, Interpretation(AGENT)).allowed("/x", AGENT)


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_every_redirect_status_is_followed(code: int) -> None:
    entry, requests = fetch({ROBOTS: redirect("/real.txt", code), SITE + "/real.txt": ok()})
    assert len(requests) == 2 and entry.outcome == Outcome.OK


def test_five_redirects_are_followed() -> None:
    entry, requests = fetch(chain(5, ok()))
    assert len(requests) == 6
    assert entry.outcome == Outcome.OK and entry.final_url == SITE + "/r5"
    assert not interpret(entry, Interpretation(AGENT)).allowed("/x", AGENT)


def test_six_redirects_count_as_unavailable() -> None:
    entry, requests = fetch(chain(6, ok()))
    assert len(requests) == 6  # the sixth hop is never requested
    assert SITE + "/r6" not in [r.url for r in requests]
    assert entry.outcome == Outcome.UNAVAILABLE and "more than 5" in entry.detail
    d = interpret(entry, Interpretation(AGENT)).decide("/anything", AGENT)
    assert d.allowed and d.outcome == "unavailable" and "more than 5" in d.reason


def test_max_redirects_is_the_policy_s() -> None:
    entry, requests = fetch(chain(2, ok()), policy=FetchPolicy(max_redirects=1))
    assert len(requests) == 2 and entry.outcome == Outcome.UNAVAILABLE


def test_redirect_loop_is_a_failed_redirect() -> None:
    entry, requests = fetch({ROBOTS: redirect("/a"), SITE + "/a": redirect("/robots.txt")})
    assert len(requests) == 2
    assert entry.outcome == Outcome.UNAVAILABLE and "loop" in entry.detail


def test_redirect_to_itself_is_a_loop() -> None:
    entry, requests = fetch({ROBOTS: redirect(ROBOTS)})
    assert len(requests) == 1 and "loop" in entry.detail


@pytest.mark.parametrize("location", [
    "ftp://site.example/robots.txt", "mailto:x@example.com", "javascript:alert(1)",
    "http://exa mple.com/robots.txt", "http://" + "a" * 300 + ".com/robots.txt",
    "http://[::1/robots.txt",
])
def test_redirect_to_a_non_http_url_is_a_failed_redirect(location: str) -> None:
    entry, requests = fetch({ROBOTS: redirect(location)})
    assert len(requests) == 1
    assert entry.outcome == Outcome.UNAVAILABLE and "redirected to" in entry.detail


def test_credentials_in_location_are_never_sent() -> None:
    entry, requests = fetch({
        ROBOTS: redirect("http://user:secret@cdn.example/robots.txt"),
        "http://cdn.example/robots.txt": ok(),
    })
    assert requests[1].url == "http://cdn.example/robots.txt"
    assert all("secret" not in r.url and "user" not in r.url for r in requests)
    assert all("Authorization" not in r.headers for r in requests)
    assert entry.outcome == Outcome.OK and "secret" not in (entry.final_url or "")


def test_a_failed_redirect_does_not_show_a_password() -> None:
    entry, _ = fetch({ROBOTS: redirect("ftp://user:secret@cdn.example/robots.txt")})
    assert entry.outcome == Outcome.UNAVAILABLE and "secret" not in entry.detail


def test_location_is_resolved_against_the_current_hop() -> None:
    _, requests = fetch({
        ROBOTS: redirect("http://cdn.example/dir/robots.txt"),
        "http://cdn.example/dir/robots.txt": redirect("other.txt"),
        "http://cdn.example/dir/other.txt": ok(),
    })
    assert requests[2].url == "http://cdn.example/dir/other.txt"
    assert requests[2].previous == "http://cdn.example/dir/robots.txt"


@pytest.mark.parametrize("target", ["http://169.254.169.254/latest/meta-data/",
                                    "http://127.0.0.1:8080/robots.txt", "http://[::1]/robots.txt",
                                    "http://10.1.2.3/robots.txt", "http://localhost/robots.txt",
                                    "http://[::ffff:127.0.0.1]/robots.txt"])
def test_redirect_to_a_private_literal_from_a_public_origin_is_refused(target: str) -> None:
    origin = "http://93.184.216.34"
    entry, requests = drive(robots_flow(origin, None, FetchPolicy(), NOW),
                            {origin + "/robots.txt": redirect(target)})
    assert [r.url for r in requests] == [origin + "/robots.txt"]  # never asked
    assert entry.outcome == Outcome.UNAVAILABLE and entry.final_url == origin + "/robots.txt"
    assert "refused a redirect from a public site to a non-public address" in entry.detail
    d = interpret(entry, Interpretation(AGENT)).decide("/x", AGENT)
    assert "refused a redirect" in d.reason


def test_a_hop_from_a_name_carries_its_previous_url_for_the_adapter() -> None:
    # site.example may itself live on a private address: the adapter resolves and decides.
    target = "http://169.254.169.254/robots.txt"
    _, requests = fetch({ROBOTS: redirect(target), target: ok()})
    assert requests[1].url == target and requests[1].previous == ROBOTS


def test_redirect_between_private_addresses_is_followed() -> None:
    origin = "http://127.0.0.1:8080"
    target = "http://127.0.0.1:9090/robots.txt"
    entry, requests = drive(robots_flow(origin, None, FetchPolicy(), NOW),
                            {origin + "/robots.txt": redirect(target), target: ok()})
    assert [r.url for r in requests] == [origin + "/robots.txt", target]
    assert entry.outcome == Outcome.OK


def test_a_hop_the_adapter_refuses_is_a_failed_redirect() -> None:
    # A name that resolves to a private address: only the adapter can tell.
    why = "robots.txt refused a redirect from a public site to internal.example"
    entry, requests = fetch({
        ROBOTS: redirect("http://internal.example/robots.txt"),
        "http://internal.example/robots.txt": RobotsResponse(0, {}, None, refused=why),
    })
    assert requests[1].previous == ROBOTS
    assert entry.outcome == Outcome.UNAVAILABLE and entry.detail == why


def test_redirect_without_location_is_unreachable() -> None:
    entry, _ = fetch({ROBOTS: status(302)})
    assert entry.outcome == Outcome.UNREACHABLE and "302" in entry.detail


# -- 304 and validators --------------------------------------------------------------------


def good_copy(**changes: object) -> RobotsEntry:
    entry = RobotsEntry(SITE, Outcome.OK, NOW - 100, NOW - 1, status=200, body=RULES,
                        etag='"v1"', last_modified="Mon, 01 Jan 2024 00:00:00 GMT",
                        good_at=NOW - 100)
    return entry.copy(**changes)


def test_a_previous_good_copy_makes_the_request_conditional() -> None:
    entry, requests = fetch({ROBOTS: status(304, {"ETag": '"v1"'})}, previous=good_copy())
    assert requests[0].headers["If-None-Match"] == '"v1"'
    assert requests[0].headers["If-Modified-Since"] == "Mon, 01 Jan 2024 00:00:00 GMT"
    assert entry.outcome == Outcome.OK and entry.body == RULES
    assert "304" in entry.detail and entry.good_at == NOW and entry.fetched_at == NOW
    assert entry.fresh_until > NOW
    assert not interpret(entry, Interpretation(AGENT)).allowed("/x", AGENT)


def test_validators_are_not_sent_to_a_redirect_target() -> None:
    other = "http://cdn.example/robots.txt"
    _, requests = fetch({ROBOTS: redirect(other), other: ok()}, previous=good_copy())
    assert "If-None-Match" in requests[0].headers
    assert dict(requests[1].headers) == {}


@pytest.mark.parametrize("previous", [
    None,
    RobotsEntry(SITE, Outcome.UNREACHABLE, NOW - 10, NOW - 1, status=503),
    RobotsEntry(SITE, Outcome.OK, NOW - 10, NOW - 1, status=200, body=None, etag='"v1"'),
])
def test_no_conditional_request_without_a_good_body(previous: RobotsEntry | None) -> None:
    entry, requests = fetch({ROBOTS: status(304)}, previous=previous)
    assert "If-None-Match" not in requests[0].headers
    assert entry.outcome != Outcome.OK or entry.body is None  # an unasked 304 renews nothing
    assert "304" in entry.detail


def test_304_keeps_the_new_validators() -> None:
    entry, _ = fetch({ROBOTS: status(304, {"ETag": '"v2"'})}, previous=good_copy())
    assert entry.etag == '"v2"'
    assert entry.last_modified == "Mon, 01 Jan 2024 00:00:00 GMT"


# -- 4xx, 5xx, 429 ------------------------------------------------------------------------


@pytest.mark.parametrize("code", [400, 401, 403, 404, 410, 451])
def test_4xx_allows_everything(code: int) -> None:
    entry, _ = fetch({ROBOTS: status(code)})
    assert entry.outcome == Outcome.UNAVAILABLE and entry.status == code
    assert interpret(entry, Interpretation(AGENT)).allowed("/anything", AGENT)


@pytest.mark.parametrize("forbidden_disallows_all", [False, True])
def test_a_proxys_407_is_unreachable_never_the_sites_4xx(forbidden_disallows_all: bool) -> None:
    # RFC 9110 15.5.8: only a proxy answers 407; robots.txt was never reached.
    policy = FetchPolicy(forbidden_disallows_all=forbidden_disallows_all)
    entry, _ = fetch({ROBOTS: status(407)}, policy=policy)
    assert entry.outcome == Outcome.UNREACHABLE and entry.status == 407
    assert entry.failures == 1 and entry.fresh_until == NOW + policy.retry_delay(1)
    d = interpret(entry, Interpretation(AGENT, fetch=policy)).decide("/anything", AGENT)
    assert not d.allowed and d.unreachable and "the proxy answered 407" in d.reason
    # A good copy stands in meanwhile, as for any unreachable robots.txt.
    entry, _ = fetch({ROBOTS: status(407)}, previous=good_copy(), policy=policy)
    assert entry.outcome == Outcome.OK and entry.body == RULES and entry.failures == 1


def test_a_407_after_a_redirect_is_the_proxys_too() -> None:
    entry, _ = fetch({ROBOTS: status(301, {"Location": "http://other.example/robots.txt"}),
                      "http://other.example/robots.txt": status(407)})
    assert entry.outcome == Outcome.UNREACHABLE and entry.status == 407


@pytest.mark.parametrize("code", [401, 403])
def test_classic_option_401_403_keep_out(code: int) -> None:
    policy = FetchPolicy(forbidden_disallows_all=True)
    entry, _ = fetch({ROBOTS: status(code)}, policy=policy)
    d = interpret(entry, Interpretation(AGENT, fetch=policy)).decide("/anything", AGENT)
    assert entry.outcome == Outcome.FORBIDDEN and not d.allowed and d.outcome == "forbidden"


@pytest.mark.parametrize("code", [429, 500, 502, 503, 504])
def test_429_5xx_disallow_everything(code: int) -> None:
    entry, _ = fetch({ROBOTS: status(code)})
    assert entry.outcome == Outcome.UNREACHABLE and entry.failures == 1
    assert entry.fresh_until == NOW + FetchPolicy().retry_delay(1)
    d = interpret(entry, Interpretation(AGENT)).decide("/anything", AGENT)
    assert not d.allowed and f"answered {code}" in d.reason


def test_429_retry_after_sets_the_retry_time() -> None:
    entry, _ = fetch({ROBOTS: status(429, {"Retry-After": "120"})})
    assert entry.outcome == Outcome.UNREACHABLE and entry.fresh_until == NOW + 120


def test_body_of_an_error_is_not_kept() -> None:
    entry, _ = fetch({ROBOTS: RobotsResponse(503, {}, b"User-agent: *\nAllow: /\n")})
    assert entry.body is None


def test_good_copy_used_while_unreachable() -> None:
    entry, _ = fetch({ROBOTS: status(503)}, previous=good_copy())
    assert entry.outcome == Outcome.OK and entry.body == RULES
    assert entry.failures == 1 and "using the copy" in entry.detail
    site = interpret(entry, Interpretation(AGENT))
    assert not site.allowed("/x", AGENT) and site.allowed("/y", AGENT)


def test_failed_redirect_after_a_good_copy_is_unavailable() -> None:
    # RFC 9309 2.3.1.2: too many redirects means unavailable, whatever we had.
    entry, _ = fetch(chain(6, ok()), previous=good_copy())
    assert entry.outcome == Outcome.UNAVAILABLE


# -- freshness -----------------------------------------------------------------------------


@pytest.mark.parametrize("cache_control", ["max-age=0", "no-cache", "no-store"])
def test_max_age_zero_is_fresh_for_min_freshness(cache_control: str) -> None:
    entry, _ = fetch({ROBOTS: ok(RULES, {"Cache-Control": cache_control})})
    assert entry.fresh_until == NOW + FetchPolicy().min_freshness


def test_max_age_shortens_freshness() -> None:
    entry, _ = fetch({ROBOTS: ok(RULES, {"Cache-Control": "max-age=600"})})
    assert entry.fresh_until == NOW + 600


def test_min_freshness_zero_allows_immediate_refetch() -> None:
    policy = FetchPolicy(min_freshness=0)
    entry, _ = fetch({ROBOTS: ok(RULES, {"Cache-Control": "max-age=0"})}, policy=policy)
    assert entry.fresh_until == NOW


# -- charset (interpret) -----------------------------------------------------------------


def test_charset_from_content_type() -> None:
    body = "User-agent: *\nDisallow: /café\n".encode("latin-1")
    entry, _ = fetch({ROBOTS: ok(body, {"Content-Type": "text/plain; charset=iso-8859-1"})})
    assert entry.content_type == "text/plain; charset=iso-8859-1"
    site = interpret(entry, Interpretation(AGENT))
    assert site.allowed("/caf%C3%A9/menu", AGENT) is False


@pytest.mark.parametrize("charset", ["idna", "undefined", "punycode", "utf-16", "x-nonsense"])
def test_unusable_charset_falls_back_to_utf8(charset: str) -> None:
    entry, _ = fetch({ROBOTS: ok(RULES, {"Content-Type": f"text/plain; charset={charset}"})})
    site = interpret(entry, Interpretation(AGENT))
    assert site.allowed("/x", AGENT) is False and site.allowed("/y", AGENT) is True


def test_utf8_bom_and_invalid_bytes() -> None:
    entry, _ = fetch({ROBOTS: ok(b"\xef\xbb\xbfUser-agent: *\nDisallow: /x\xff\nDisallow: /y\n")})
    assert interpret(entry, Interpretation(AGENT)).allowed("/y", AGENT) is False


# -- another well-known file: its account names it ---------------------------------------

TDMREP = SITE + "/.well-known/tdmrep.json"


@pytest.mark.parametrize(("server", "previous", "detail"), [
    ({TDMREP: ok(b"[]")}, None, "tdmrep.json answered 200"),
    ({TDMREP: status(404)}, None, "tdmrep.json answered 404"),
    ({TDMREP: status(503)}, None, "tdmrep.json answered 503"),
    ({TDMREP: status(304)}, "good", "tdmrep.json not modified (304)"),
    ({TDMREP: redirect("/a"), SITE + "/a": redirect(TDMREP)}, None,
     f"tdmrep.json redirect loop at {TDMREP}"),
    ({TDMREP: redirect("ftp://site.example/x")}, None,
     "tdmrep.json redirected to 'ftp://site.example/x'"),
    ({TDMREP: redirect("/r1"), **{f"{SITE}/r{i}": redirect(f"/r{i + 1}") for i in range(1, 6)}},
     None, "tdmrep.json redirected more than 5 times"),
])
def test_a_tdmrep_fetch_names_tdmrep_json_in_its_account(
        server: dict[str, RobotsResponse], previous: str | None, detail: str) -> None:
    flow = robots_flow(SITE, good_copy() if previous else None, FetchPolicy(), NOW,
                       path="/.well-known/tdmrep.json")
    entry, requests = drive(flow, server)
    assert entry.detail == detail
    assert {r.name for r in requests} == {"tdmrep.json"}  # an adapter's refusal names it too


def test_a_tdmrep_redirect_into_a_private_address_names_tdmrep_json() -> None:
    origin = "http://93.184.216.34"
    entry, _ = drive(robots_flow(origin, None, FetchPolicy(), NOW, path="/.well-known/tdmrep.json"),
                     {origin + "/.well-known/tdmrep.json": redirect("http://127.0.0.1/x")})
    assert entry.detail == ("tdmrep.json redirect refused a redirect from a public site to a "
                            "non-public address (127.0.0.1)")


def test_robots_txt_requests_name_robots_txt() -> None:
    _, requests = fetch({ROBOTS: redirect("/a"), SITE + "/a": ok()})
    assert [r.name for r in requests] == ["robots.txt", "robots.txt"]
