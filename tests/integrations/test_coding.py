"""decode_capped: a robots.txt body's content codings undone, never past the limit.

The one decoder every client adapter uses (aiohttp, httpx, Scrapy); the same
cases through each client are in tests/contract/test_compressed_robots.py.
"""

from __future__ import annotations

import gzip
import zlib
from typing import Any

import brotli
import pytest

from robotgate.policy import content_coding
from robotgate.policy.content_coding import MAX_CODINGS, UndecodableBody, decode_capped
from tests.support.hostile import brotli_bomb, gzip_bomb

TEXT = b"User-agent: *\nDisallow: /private/\n" + b"# comment\n" * 5000


def test_gzip_is_undone_and_cut_at_the_limit() -> None:
    packed = gzip.compress(TEXT)
    assert decode_capped(packed, ["gzip"], 10**6) == TEXT
    assert decode_capped(packed, ["x-gzip"], 100) == TEXT[:100]
    assert decode_capped(packed, ["GZIP"], 100) == TEXT[:100]  # tokens ignore case


def test_deflate_with_and_without_the_zlib_wrapper() -> None:
    wrapped = zlib.compress(TEXT)
    raw = zlib.compressobj(wbits=-15)
    bare = raw.compress(TEXT) + raw.flush()
    assert decode_capped(wrapped, ["deflate"], 10**6) == TEXT
    assert decode_capped(bare, ["deflate"], 10**6) == TEXT


@pytest.mark.slow
def test_a_bomb_inflates_only_as_far_as_the_limit() -> None:
    # 256 MiB of spaces each: text, so what comes back is the cap's worth of it.
    bombs = {"gzip": gzip_bomb(256, b" "), "br": brotli_bomb(256, b" ")}
    for coding, bomb in bombs.items():
        assert len(bomb) < 300_000
        assert decode_capped(bomb, [coding], 4096) == b" " * 4096


def test_a_bomb_of_nul_bytes_is_not_text_once_decoded() -> None:
    for coding, bomb in {"gzip": gzip_bomb(256), "br": brotli_bomb(256)}.items():
        with pytest.raises(UndecodableBody, match="not text once decoded"):
            decode_capped(bomb, [coding], 4096)


def test_zstd_when_a_decoder_is_installed() -> None:
    zstd: Any = pytest.importorskip("backports.zstd")
    assert decode_capped(zstd.compress(TEXT), ["zstd"], 50) == TEXT[:50]
    with pytest.raises(UndecodableBody, match="came zstd-encoded and could not be decoded"):
        decode_capped(b"\xff" * 64, ["zstd"], 1000)


def test_a_truncated_stream_gives_what_it_holds() -> None:
    packed = gzip.compress(TEXT)
    got = decode_capped(packed[: len(packed) // 2], ["gzip"], 10**6)
    assert 0 < len(got) < len(TEXT) and TEXT.startswith(got)


def test_identity_and_unknown_tokens_are_left_alone() -> None:
    # Servers that send "Content-Encoding: utf-8" mean no coding (as aiohttp reads it).
    for codings in ([], ["identity"], ["utf-8"], ["", " "]):
        assert decode_capped(TEXT, codings, 100) == TEXT[:100]


def test_several_codings_are_undone_last_applied_first() -> None:
    both = brotli.compress(gzip.compress(TEXT))
    assert decode_capped(both, ["gzip, br"], 10**6) == TEXT
    assert decode_capped(both, ["gzip", "br"], 10**6) == TEXT  # two header lines
    assert decode_capped(both, ["GZip ,BR"], 10**6) == TEXT
    twice = gzip.compress(gzip.compress(TEXT))
    assert decode_capped(twice, ["gzip, gzip"], 10**6) == TEXT
    assert decode_capped(twice, ["x-gzip, gzip"], 10**6) == TEXT
    assert decode_capped(gzip.compress(TEXT), ["identity, gzip"], 10**6) == TEXT
    assert decode_capped(gzip.compress(TEXT), ["gzip, identity"], 10**6) == TEXT
    assert decode_capped(gzip.compress(TEXT), ["utf-8, gzip"], 10**6) == TEXT


@pytest.mark.slow
def test_stacked_codings_stay_within_the_limit() -> None:
    # Each layer is cut at the limit: the outer one cannot hand the inner one a bomb.
    bomb = gzip_bomb(64, b" ")
    assert decode_capped(gzip.compress(bomb), ["gzip, gzip"], 4096) == b" " * 4096
    assert decode_capped(brotli.compress(bomb), ["gzip, br"], 4096) == b" " * 4096


def test_a_registered_coding_with_no_decoder_here_is_undecodable() -> None:
    # Compressed bytes read as rules would find none and allow the whole site.
    for coding in ("compress", "x-compress", "aes128gcm", "pack200-gzip", "dcb", "dcz", "exi"):
        with pytest.raises(UndecodableBody, match=f"came {coding}-encoded, a coding"):
            decode_capped(TEXT, [coding], 100)
    with pytest.raises(UndecodableBody, match="came compress-encoded"):
        decode_capped(gzip.compress(TEXT), ["compress, gzip"], 100)


def test_more_codings_than_the_bound_are_undecodable() -> None:
    body = TEXT
    for _ in range(MAX_CODINGS):
        body = gzip.compress(body)
    assert decode_capped(body, [", ".join(["gzip"] * MAX_CODINGS)], 10**6) == TEXT
    with pytest.raises(UndecodableBody, match=f"more than {MAX_CODINGS} content codings"):
        decode_capped(gzip.compress(body), [", ".join(["gzip"] * (MAX_CODINGS + 1))], 10**6)
    # identity and tokens naming no coding are not counted: nothing is undone for them.
    many = ["identity"] * 50 + ["utf-8"] * 50 + ["gzip"]
    assert decode_capped(gzip.compress(TEXT), many, 10**6) == TEXT


def test_corrupt_data_is_an_undecodable_body() -> None:
    with pytest.raises(UndecodableBody, match="came gzip-encoded and could not be decoded"):
        decode_capped(b"not gzip at all", ["gzip"], 1000)
    with pytest.raises(UndecodableBody, match="came br-encoded"):
        decode_capped(b"\xff" * 64, ["br"], 1000)
    # The outer layer decodes, the inner one is corrupt: still undecodable.
    with pytest.raises(UndecodableBody, match="came gzip-encoded and could not be decoded"):
        decode_capped(brotli.compress(b"not gzip at all"), ["gzip, br"], 1000)
    assert issubclass(UndecodableBody, ValueError)


def test_a_limit_of_zero_reads_nothing() -> None:
    # zlib takes a max_length of 0 as "no limit": never passed on.
    assert decode_capped(gzip.compress(TEXT), ["gzip"], 0) == b""


def test_without_a_bounded_decoder_the_body_is_undecodable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    packed = brotli.compress(TEXT)
    monkeypatch.setattr(content_coding, "_module", lambda *names: None)
    with pytest.raises(UndecodableBody, match="no brotli decoder is installed"):
        decode_capped(packed, ["br"], 100)
    with pytest.raises(UndecodableBody, match="no zstd decoder is installed"):
        decode_capped(b"x", ["zstd"], 100)

    class OldDecompressor:  # a brotli whose process() takes no output limit
        def process(self, data: bytes) -> bytes:
            raise AssertionError("would inflate without a limit")

    class OldBrotli:
        Decompressor = OldDecompressor

    monkeypatch.setattr(content_coding, "_module", lambda *names: OldBrotli)
    with pytest.raises(UndecodableBody, match="cannot decode within a limit"):
        decode_capped(packed, ["br"], 100)


@pytest.mark.parametrize("token", ["x-unknown", "utf-8", "none"])
def test_data_that_is_no_text_under_a_token_naming_no_coding_never_reads_as_no_rules(
        token: str) -> None:
    # gzip and zlib data are what the server meant: inflated, within the limit.
    assert decode_capped(gzip.compress(TEXT), [token], 100) == TEXT[:100]
    assert decode_capped(zlib.compress(TEXT), [token], 100) == TEXT[:100]
    assert decode_capped(gzip_bomb(64, b" "), [token], 1000) == b" " * 1000  # a bomb: capped
    # Any other bytes holding NULs are not text: unreachable, never "allow all".
    for body in (b"\x00\x01\x02" + TEXT, zlib.compress(TEXT)[:2] + b"\x00"):
        with pytest.raises(UndecodableBody, match="not text"):
            decode_capped(body, [token], 10**6)


def test_text_that_only_looks_like_a_zlib_header_is_read_as_it_is() -> None:
    # "x " and "Xf" open a zlib header by its check bits; text does not inflate.
    for text in (b"x \n" + TEXT, b"Xf\n" + TEXT):
        assert decode_capped(text, ["utf-8"], 10**6) == text
    wide = "User-agent: *\nDisallow: /\n".encode("utf-16")  # NULs, after its BOM
    assert decode_capped(wide, ["x-unknown"], 10**6) == wide


def test_text_sent_as_it_is_is_never_tried_as_brotli(monkeypatch: pytest.MonkeyPatch) -> None:
    # A body that is text reads as it came, as a browser reads it; only a body that is
    # no text is tried as a brotli stream (brotli has no magic number).
    tried: list[bytes] = []

    class CountingBrotli:
        class Decompressor:
            def process(self, data: bytes, output_buffer_limit: int) -> bytes:
                tried.append(data)
                return brotli.Decompressor().process(  # type: ignore[no-any-return]
                    data, output_buffer_limit=output_buffer_limit)

            def is_finished(self) -> bool:
                return True

    monkeypatch.setattr(content_coding, "_module", lambda *names: CountingBrotli)
    for token in ([], ["identity"], ["utf-8"]):
        assert decode_capped(TEXT, token, 10**6) == TEXT
    assert tried == []
    packed = brotli.compress(TEXT)
    assert decode_capped(packed, [], 10**6) == TEXT
    assert tried == [packed]
