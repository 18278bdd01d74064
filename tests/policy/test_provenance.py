"""The provenance value: what the private-network rule's check is handed for each kind."""

from __future__ import annotations

from robotgate.policy.provenance import INPUT, Provenance, pointer_of


def test_input_is_never_judged() -> None:
    assert INPUT.is_input
    assert INPUT.from_url is None
    assert str(INPUT) == "input"


def test_a_pointer_of_a_page_still_to_be_looked_up_names_the_page() -> None:
    pointer = pointer_of("http://a.test/p")
    assert not pointer.is_input
    assert pointer.from_url == "http://a.test/p"
    assert str(pointer) == "pointer of http://a.test/p (unjudged)"


def test_a_pointer_of_a_page_known_public_needs_no_look_up() -> None:
    assert pointer_of("http://a.test/p", public=True).from_url == ""
    assert pointer_of("").public is True
    assert pointer_of("").from_url == ""


def test_a_pointer_of_a_page_known_private_points_where_it_likes() -> None:
    pointer = pointer_of("http://intranet.test/", public=False)
    assert pointer.from_url is None
    assert not pointer.is_input
    assert pointer == Provenance("http://intranet.test/", False)
