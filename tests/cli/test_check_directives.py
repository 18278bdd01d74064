"""``robotgate check --headers FILE / --html FILE``: what a page says to the agent,
with or without a robots.txt, in text and JSON."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from robotgate.cli import main
from robotgate.cli.check import parse_header_lines

# What `curl -si -L` prints for a redirected page: the first response's headers
# are not the page's.
CURL_I = (
    b"HTTP/1.1 301 Moved Permanently\r\n"
    b"Location: /page\r\n"
    b"X-Robots-Tag: noindex\r\n"
    b"\r\n"
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: text/html; charset=utf-8\r\n"
    b"X-Robots-Tag: mybot: nofollow\r\n"
    b"X-Robots-Tag: unavailable_after: 25 Jun 2010 15:00:00 PST\r\n"
    b"tdm-reservation: 1\r\n"
    b"\r\n"
    b'<html><head><meta name="robots" content="noarchive">'
    b'<meta name="tdm-policy" content="https://p.example/policy"></head><body>x</body></html>'
)
PAGE = b'<!doctype html><html><head><meta name="robots" content="none"></head>'


def run(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_headers_alone_explain_the_page(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    headers = tmp_path / "headers.txt"
    headers.write_bytes(CURL_I)
    code, out, err = run(["check", "--headers", str(headers), "--agent", "MyBot/1.0"], capsys)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "directives    nofollow, noarchive for 'MyBot/1.0'",
        "unavailable   after 2010-06-25T23:00:00+00:00",
        "tdm           rights reserved, policy https://p.example/policy",
        "source        `X-Robots-Tag: mybot: nofollow` (header 1)",
        "source        `X-Robots-Tag: unavailable_after: 25 Jun 2010 15:00:00 PST` (header 2)",
        "source        `tdm-reservation: 1` (header 1)",
        "source        `<meta name=robots content=noarchive>` at byte 12",
        "source        `<meta name=tdm-policy content=https://p.example/policy>` at byte 52",
    ]


def test_a_policy_without_a_reservation_is_shown(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    headers = tmp_path / "headers.txt"
    headers.write_bytes(b"HTTP/1.1 200 OK\r\ntdm-policy: https://p.example/policy\r\n\r\n")
    code, out, _ = run(["check", "--headers", str(headers)], capsys)
    assert code == 0
    assert "tdm           reservation not stated, policy https://p.example/policy" in out


def test_another_agent_gets_the_directives_for_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    headers = tmp_path / "headers.txt"
    headers.write_bytes(CURL_I)
    code, out, _ = run(["check", "--headers", str(headers), "--json"], capsys)
    assert code == 0
    record = json.loads(out)
    assert record["agent"] == "*"
    assert record["directives"] == {
        "noarchive": True,
        "unavailable_after": "2010-06-25T23:00:00+00:00",
        "tdm_reservation": True,
        "tdm_policy": "https://p.example/policy",
        "sources": [
            "`X-Robots-Tag: unavailable_after: 25 Jun 2010 15:00:00 PST` (header 2)",
            "`tdm-reservation: 1` (header 1)",
            "`<meta name=robots content=noarchive>` at byte 12",
            "`<meta name=tdm-policy content=https://p.example/policy>` at byte 52",
        ],
    }


def test_html_from_standard_input(monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(PAGE)))
    code, out, _ = run(["check", "--html", "-"], capsys)
    assert code == 0
    assert out.splitlines() == [
        "directives    noindex, nofollow for '*'",
        "source        `<meta name=robots content=none>` at byte 27",
    ]


def test_html_is_read_as_html_whatever_the_headers_say(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "h.txt").write_text("Content-Type: text/plain\nX-Robots-Tag: noai\n")
    (tmp_path / "page.html").write_bytes(PAGE)
    code, out, _ = run(["check", "--headers", str(tmp_path / "h.txt"), "--html",
                        str(tmp_path / "page.html"), "--json"], capsys)
    assert code == 0
    directives = json.loads(out)["directives"]
    assert [k for k, v in directives.items() if v is True] == ["noindex", "nofollow", "noai"]


def test_with_a_robots_txt_each_line_carries_the_directives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: /private/\n")
    (tmp_path / "page.html").write_bytes(PAGE)
    argv = ["check", str(robots), "/private/x", "/ok", "--html", str(tmp_path / "page.html")]
    code, out, _ = run([*argv, "--json"], capsys)
    assert code == 1  # the exit status is robots.txt's alone
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["allowed"] for r in records] == [False, True]
    assert all(r["directives"]["noindex"] for r in records)
    code, out, _ = run(argv, capsys)
    lines = out.splitlines()
    assert lines[0].startswith("DISALLOWED    /private/x")
    assert lines[-2:] == ["directives    noindex, nofollow for '*'",
                          "source        `<meta name=robots content=none>` at byte 27"]
    # No URL needed when the page is what is asked about.
    code, out, _ = run(["check", str(robots), "--html", str(tmp_path / "page.html")], capsys)
    assert code == 0 and out.startswith("directives    noindex, nofollow")


def test_mistakes_are_one_line_and_status_2(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["check", "--html", str(tmp_path / "missing.html")], capsys)
    assert (code, out) == (2, "")
    assert err == (f"robotgate: error: cannot read '{tmp_path / 'missing.html'}': "
                   "No such file or directory\n")
    code, _, err = run(["check", "-", "--headers", "-"], capsys)
    assert code == 2
    assert err == ("robotgate: error: only one of ROBOTS, --headers and --html can be '-' "
                   "(standard input)\n")
    code, _, err = run(["check"], capsys)
    assert code == 2 and "or a page's --headers or --html" in err


def test_header_lines_as_curl_prints_them() -> None:
    headers, body = parse_header_lines(CURL_I)
    assert headers == [
        ("Content-Type", "text/html; charset=utf-8"),
        ("X-Robots-Tag", "mybot: nofollow"),
        ("X-Robots-Tag", "unavailable_after: 25 Jun 2010 15:00:00 PST"),
        ("tdm-reservation", "1"),
    ]
    assert body.startswith(b"<html><head>")
    # Folded lines continue the one before; lines that are no header are skipped.
    headers, body = parse_header_lines(
        b"X-Robots-Tag: noindex,\n  nofollow\nnot a header\nBad Name : y\n"
        b"tdm-policy: https://p/\xe9\n")
    assert headers == [("X-Robots-Tag", "noindex, nofollow"), ("tdm-policy", "https://p/\u00e9")]
    assert body == b""


def test_a_megabyte_of_blank_and_folded_lines_is_read_through() -> None:
    # Hostile shapes of a --headers file, read in one pass (a reader copying
    # the rest of the input at each line would take tens of seconds here).
    many_folds = b"X-Robots-Tag: noindex\n" + b" ,nofollow\n" * 100_000
    assert parse_header_lines(many_folds)[0][0][1].count("nofollow") == 100_000
    blank_then_blocks = b"\n" * 300_000 + b"HTTP/1.1 301\nA: 1\n\n\n\nHTTP/1.1 200\nB: 2\n\nbody"
    assert parse_header_lines(blank_then_blocks) == ([("B", "2")], b"body")
