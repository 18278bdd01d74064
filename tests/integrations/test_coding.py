"""decode_capped: a robots.txt body's content codings undone, never past the limit."""

from __future__ import annotations

import gzip
import zlib
from typing import Any

import brotli
import pytest

from robotgate.integrations import _coding
from robotgate.integrations._coding import UndecodableBody, decode_capped
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


def test_a_bomb_inflates_only_as_far_as_the_limit() -> None:
    bombs = {"gzip": gzip_bomb(256), "br": brotli_bomb(256)}  # 256 MiB of zeros each
    for coding, bomb in bombs.items():
        assert len(bomb) < 300_000
        assert decode_capped(bomb, [coding], 4096) == b"\0" * 4096


def test_zstd_when_a_decoder_is_installed() -> None:
    zstd: Any = pytest.importorskip("backports.zstd")
    assert decode_capped(zstd.compress(TEXT), ["zstd"], 50) == TEXT[:50]


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


def test_corrupt_data_is_an_undecodable_body() -> None:
    with pytest.raises(UndecodableBody, match="came gzip-encoded and could not be decoded"):
        decode_capped(b"not gzip at all", ["gzip"], 1000)
    with pytest.raises(UndecodableBody, match="came br-encoded"):
        decode_capped(b"\xff" * 64, ["br"], 1000)
    assert issubclass(UndecodableBody, ValueError)


def test_a_limit_of_zero_reads_nothing() -> None:
    # zlib takes a max_length of 0 as "no limit": never passed on.
    assert decode_capped(gzip.compress(TEXT), ["gzip"], 0) == b""


def test_without_a_bounded_decoder_the_body_is_undecodable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    packed = brotli.compress(TEXT)
    monkeypatch.setattr(_coding, "_module", lambda *names: None)
    with pytest.raises(UndecodableBody, match="no brotli decoder is installed"):
        decode_capped(packed, ["br"], 100)
    with pytest.raises(UndecodableBody, match="no zstd decoder is installed"):
        decode_capped(b"x", ["zstd"], 100)

    class OldDecompressor:  # a brotli whose process() takes no output limit
        def process(self, data: bytes) -> bytes:
            raise AssertionError("would inflate without a limit")

    class OldBrotli:
        Decompressor = OldDecompressor

    monkeypatch.setattr(_coding, "_module", lambda *names: OldBrotli)
    with pytest.raises(UndecodableBody, match="cannot decode within a limit"):
        decode_capped(packed, ["br"], 100)
