"""``CrawlResult.final_url`` returns where a page's answer came from whole: the URL as
given, or the redirect's target as the server wrote it (docs/secrets.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from robotgate.crawl.results import final_url_of

GIVEN = "http://user:pw@a.example/p?token=S#access_token=T&token_type=bearer"


@dataclass
class Answer:
    url: str
    history: tuple[object, ...] | None = None
    headers: dict[str, str] = field(default_factory=dict)


def test_an_answer_from_the_url_given_returns_it_as_given() -> None:
    # The client's URL has no user information or fragment: they were the caller's.
    assert final_url_of(GIVEN, Answer("http://a.example/p?token=S", history=())) == GIVEN
    assert final_url_of(GIVEN, Answer("http://a.example/p?token=S")) == GIVEN


def test_a_redirect_returns_its_target_as_the_server_wrote_it() -> None:
    hop = Answer("http://a.example/p?token=S", headers={"Location": "/landed?session=S2#f"})
    answer = Answer("http://a.example/landed?session=S2", history=(hop,))
    assert final_url_of(GIVEN, answer) == "http://a.example/landed?session=S2#f"


def test_redirects_the_gate_followed_return_the_answers_url() -> None:
    answer = Answer("http://b.example/landed?session=S2", history=())
    assert final_url_of(GIVEN, answer) == "http://b.example/landed?session=S2"
