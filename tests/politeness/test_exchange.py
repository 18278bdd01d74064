"""The exchange (src/robotgate/politeness/exchange.py): a request and its redirects over a
client's Sender, each request in its own turn, with its provenance; no network."""

from __future__ import annotations

from ipaddress import ip_address

import pytest

from robotgate import Disallowed, Network, RobotGate, TooManyRedirects
from robotgate.policy.fetch_flow import RobotsRequest, RobotsResponse
from robotgate.policy.hops import A_POINTER, REFUSED
from robotgate.policy.provenance import INPUT, Provenance, pointer_of
from robotgate.politeness.exchange import (
    Answer,
    NextHop,
    Reach,
    Resend,
    answer_of,
    first_reach,
    robots_reach,
)
from robotgate.politeness.request_turn import RequestTurn
from tests.support.transports import FakeTransport

AGENT = "SeamBot/1.0"
PUBLIC_ADDRESS = "93.184.216.34"


class Reply:
    def __init__(self, url: str, status: int, location: str | None = None) -> None:
        self.url = url
        self.status = status
        self.location = location
        self.closed = False


class FakeSender:
    """Answers from a table by URL (a redirect: ``(status, location)``); records each
    turn it sent in, and the responses it was done with."""

    def __init__(self, table: dict[str, tuple[int, str | None]], resends: int = 0,
                 again: int | None = None) -> None:
        self.table = table
        self.resends = resends
        self.again = again  # a status the client answers with the same request (a 401's)
        self.dropped: list[Reply] = []
        self.turns: list[RequestTurn] = []
        self.followed: list[tuple[str, str]] = []
        self.hops: list[NextHop] = []
        self.method = "GET"

    def prepare(self, url: str) -> str:
        return url

    async def send(self, turn: RequestTurn) -> Reply:
        self.turns.append(turn)
        if self.resends:
            self.resends -= 1
            raise Resend(ConnectionResetError("dropped"))
        status, location = self.table.get(turn.url, (200, None))
        return Reply(turn.url, status, location)

    def answer(self, response: Reply) -> Answer:
        return Answer(response.status, None, response.location, response.status == self.again)

    async def redirected(self, response: Reply, hop: NextHop) -> None:
        response.closed = True
        self.followed.append((response.url, hop.url))
        self.hops.append(hop)
        self.method = hop.method

    def drop(self, response: Reply) -> None:
        response.closed = True
        self.dropped.append(response)


class Names:
    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.asked: list[str] = []

    async def __call__(self, host: str) -> list[str]:
        self.asked.append(host)
        return self.table.get(host, [])


def gate(transport: FakeTransport | None = None, **options: object) -> RobotGate:
    transport = transport or FakeTransport(lambda request: RobotsResponse(200, {}, b""))
    return RobotGate(AGENT, delay=0, network=Network(robots_transport=transport),
                     **options)  # type: ignore[arg-type]


async def test_each_hop_is_a_turn_of_its_own_and_a_pointer_of_the_url_redirected() -> None:
    sender = FakeSender({"http://a.example/1": (301, "/2"),
                         "http://a.example/2": (302, "http://b.example/3")})
    names = Names({"a.example": [PUBLIC_ADDRESS], "b.example": ["93.184.216.35"]})
    async with gate() as g:
        done = await g.exchange(sender, "http://a.example/1", INPUT, resolve=names)
        done.turn.release()
    assert done.url == "http://b.example/3" and done.response.status == 200
    assert [turn.provenance for turn in sender.turns] == [
        INPUT, pointer_of("http://a.example/1"), pointer_of("http://a.example/2")]
    assert sender.followed == [("http://a.example/1", "http://a.example/2"),
                               ("http://a.example/2", "http://b.example/3")]
    assert all(reply.closed for reply in done.hops) and len(done.hops) == 2


async def test_each_hop_is_the_cores_next_hop_for_the_method_being_sent() -> None:
    sender = FakeSender({"http://a.example/1": (302, "/2"),
                         "http://a.example/2": (303, "http://b.example/3")})
    sender.method = "POST"
    names = Names({"a.example": [PUBLIC_ADDRESS], "b.example": ["93.184.216.35"]})
    async with gate() as g:
        done = await g.exchange(sender, "http://a.example/1", INPUT, resolve=names)
        done.turn.release()
    first, second = sender.hops
    assert (first.url, first.method, first.keeps_body, first.leaves_origin) == (
        "http://a.example/2", "GET", False, False)
    assert (second.url, second.method, second.leaves_origin) == ("http://b.example/3", "GET",
                                                                 True)
    assert "authorization" in second.dropped and "authorization" not in first.dropped


async def test_a_redirect_from_a_public_site_into_a_private_address_is_not_sent() -> None:
    sender = FakeSender({"http://a.example/1": (302, "http://10.0.0.7/admin")})
    async with gate() as g:
        with pytest.raises(Disallowed) as refused:
            await g.exchange(sender, "http://a.example/1", INPUT,
                             resolve=Names({"a.example": [PUBLIC_ADDRESS]}))
    assert refused.value.decision.outcome == REFUSED
    assert [turn.url for turn in sender.turns] == ["http://a.example/1"]


async def test_a_stored_public_bit_is_taken_without_a_look_up() -> None:
    names = Names({"intranet.example": ["10.0.0.2"]})
    async with gate() as g:
        with pytest.raises(Disallowed):
            await g.exchange(FakeSender({}), "http://10.0.0.7/",
                             Provenance("http://intranet.example/", public=True), resolve=names)
        stored_private = FakeSender({})
        done = await g.exchange(stored_private, "http://10.0.0.7/",
                                Provenance("http://gone.example/", public=False), resolve=names)
        done.turn.release()
    assert names.asked == []  # neither page looked up
    assert done.response.status == 200


async def test_past_max_redirects_too_many_redirects_and_the_last_answer_dropped() -> None:
    sender = FakeSender({"http://a.example/loop": (302, "/loop")})
    async with gate() as g:
        with pytest.raises(TooManyRedirects) as many:
            await g.exchange(sender, "http://a.example/loop", INPUT, max_redirects=2,
                             resolve=Names({"a.example": [PUBLIC_ADDRESS]}))
    assert many.value.limit == 2 and len(sender.turns) == 3
    assert all(turn.group is None for turn in sender.turns)  # every turn released


async def test_a_resend_is_a_new_turn_and_only_one() -> None:
    async with gate() as g:
        once = FakeSender({}, resends=1)
        done = await g.exchange(once, "http://a.example/x", INPUT)
        done.turn.release()
        twice = FakeSender({}, resends=2)
        with pytest.raises(ConnectionResetError):
            await g.exchange(twice, "http://a.example/y", INPUT)
    assert len(once.turns) == 2 and once.turns[0] is not once.turns[1]
    assert len(twice.turns) == 2


async def test_a_challenges_answer_is_a_new_turn_once_a_hop() -> None:
    """A client that answers every 401 with the same request (it would answer forever)
    sends each hop's answer in a turn of its own, the challenged turn released and its
    response closed first, once a hop; the last answer is the caller's."""
    sender = FakeSender({"http://a.example/r": (302, "/x"), "http://a.example/x": (401, None)},
                        again=401)
    async with gate() as g:
        done = await g.exchange(sender, "http://a.example/r", INPUT,
                                resolve=Names({"a.example": [PUBLIC_ADDRESS]}))
        done.turn.release()
    assert [turn.url for turn in sender.turns] == [
        "http://a.example/r", "http://a.example/x", "http://a.example/x"]
    assert len({id(turn) for turn in sender.turns}) == 3
    assert [turn.provenance for turn in sender.turns[1:]] == [pointer_of("http://a.example/r")] * 2
    assert all(turn.group is None for turn in sender.turns)  # every turn released
    [challenged] = sender.dropped
    assert challenged.closed and challenged is not done.response
    assert done.response.status == 401 and done.url == "http://a.example/x"


async def test_the_route_reaches_the_robots_txt_request() -> None:
    transport = FakeTransport(lambda request: RobotsResponse(200, {}, b""))
    async with gate(transport) as g:
        done = await g.exchange(FakeSender({}), "http://a.example/x", INPUT, via="proxy-1")
        done.turn.release()
    assert [request.via for request in transport.requests] == ["proxy-1"]


def test_an_answer_of_a_status_alone_is_made_once_per_status() -> None:
    # Most answers say only their status: the sender hands out one value per status.
    assert answer_of(200) == Answer(200, None, None)
    assert answer_of(200) is answer_of(200) and answer_of(404) is not answer_of(200)


async def test_a_first_robots_txt_request_is_judged_at_once_as_robots_reach_judges_it() -> None:
    async def looks_up(host: str) -> list[str]:
        raise AssertionError("a first request looks nothing up")

    plain = RobotsRequest("http://a.example/robots.txt")
    pointed = RobotsRequest("http://a.example/robots.txt", guard=True,
                            checked=(ip_address(PUBLIC_ADDRESS),))
    for request in (plain, pointed):
        assert first_reach(request) == await robots_reach(request, True, looks_up)
    assert first_reach(plain) == Reach()
    assert first_reach(pointed) == Reach(True, pointed.checked, A_POINTER)
