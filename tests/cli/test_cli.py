"""The ``robotgate`` command: ``check`` and ``fetch``, in-process and as a real
process (a pseudo-terminal for the progress bar, SIGINT for Ctrl-C), against
the loopback benchmark server."""

from __future__ import annotations

import asyncio
import fcntl
import io
import json
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from robotgate.cli import default_store_path, main
from testbed.server import BenchServer, HostPlan

AGENT = "TestBot/1.0 (+https://example.com/bot)"
ROBOTS = """\
User-agent: *
Disallow: /private/
Allow: /private/press/
Disallow: /%7Ejoe/
Crawl-delay: 2

User-agent: GreedyBot
Disallow: /

Sitemap: https://example.com/sitemap.xml
"""


def run(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def run_async(
    argv: Sequence[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    # The CLI runs its own event loop, so it gets a thread of its own while
    # the benchmark server keeps serving on the test's loop.
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    """A user mistake is reported in exactly one line, never with a traceback."""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("robotgate: error: ")
    return lines[0]


def json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def summary_row(text: str, address: str) -> list[str]:
    """Fetched, refused and errors in the summary row of the host at ``address``
    (its politeness key names it: ``host:ADDRESS`` or ``http://ADDRESS:PORT``)."""
    for line in text.replace("\r", "\n").splitlines():
        key, *cells = line.split() or [""]
        if key.split(":")[-1] == address or key.split("//")[-1].split(":")[0] == address:
            return [cells[0], cells[2], cells[4]]
    raise AssertionError(f"no summary row for {address} in {text!r}")


@pytest.fixture
def robots_file(tmp_path: Path) -> Path:
    path = tmp_path / "robots.txt"
    path.write_text(ROBOTS)
    return path


# -- check ------------------------------------------------------------------


def test_check_file_says_why(robots_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        [
            "check", str(robots_file),
            "https://example.com/private/report",
            "https://example.com/private/press/release",
            "/about",
            "--agent", "MyBot/1.0",
        ],
        capsys,
    )
    assert code == 1 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["DISALLOWED", "https://example.com/private/report"]
    assert "'Disallow: /private/' (line 2)" in lines[1] and "group for '*'" in lines[1]
    assert lines[2].split() == ["ALLOWED", "https://example.com/private/press/release"]
    assert "'Allow: /private/press/' (line 3)" in lines[3]
    assert lines[4].split() == ["ALLOWED", "/about"]
    assert "no rule matches" in lines[5]


def test_check_exit_status_zero_when_all_allowed(
    robots_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["check", str(robots_file), "https://example.com/", "/blog/x"], capsys)
    assert code == 0
    assert out.count("ALLOWED") == 2 and "DISALLOWED" not in out


def test_check_quotes_the_line_when_the_pattern_was_normalised(
    robots_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["check", str(robots_file), "https://example.com/~joe/x"], capsys)
    assert code == 1
    assert "'Disallow: /~joe/' (line 4)" in out
    assert "line 4: Disallow: /%7Ejoe/" in out


def test_check_json_one_object_per_url(
    robots_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        [
            "check", str(robots_file), "https://example.com/x", "https://example.com/private/y",
            "--agent", "GreedyBot/2.0", "--json", "--crawl-delay", "--sitemaps",
        ],
        capsys,
    )
    assert code == 1
    first, second = json_lines(out)
    assert first["url"] == "https://example.com/x"
    assert first["allowed"] is False
    assert first["rule"] == "Disallow: /" and first["line"] == 8
    assert first["group"] == ["greedybot"]
    assert "line 8" in str(first["reason"])
    assert first["agent"] == "GreedyBot/2.0" and first["robots"] == str(robots_file)
    assert first["crawl_delay"] is None  # GreedyBot's group has none
    assert first["sitemaps"] == ["https://example.com/sitemap.xml"]
    assert second["url"] == "https://example.com/private/y" and second["allowed"] is False


def test_check_crawl_delay_and_sitemaps_on_request(
    robots_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["check", str(robots_file), "/x"], capsys)
    assert "crawl-delay" not in out and "sitemap" not in out
    code, out, _ = run(["check", str(robots_file), "--crawl-delay", "--sitemaps"], capsys)
    assert code == 0
    assert "crawl-delay   2s for '*'" in out
    assert "sitemap       https://example.com/sitemap.xml" in out
    code, out, _ = run(["check", str(robots_file), "--crawl-delay", "--json"], capsys)
    (record,) = json_lines(out)
    assert record["crawl_delay"] == 2.0 and "url" not in record


def test_check_reads_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin = io.TextIOWrapper(io.BytesIO(b"User-agent: *\nDisallow: /private/\n"))
    monkeypatch.setattr(sys, "stdin", stdin)
    code, out, _ = run(["check", "-", "https://example.com/private/x"], capsys)
    assert code == 1
    assert "DISALLOWED" in out and "(line 2)" in out


def test_check_example_file_from_the_docs(capsys: pytest.CaptureFixture[str]) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "robots.txt"
    code, out, _ = run(
        ["check", str(example), "https://example.com/private/report", "--agent", "MyBot/1.0"],
        capsys,
    )
    assert code == 1 and "DISALLOWED" in out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["check", "ROBOTS", "ftp://example.com/x"], "invalid URL 'ftp://example.com/x'"),
        (["check", "ROBOTS", "example.com/x"], "invalid URL 'example.com/x'"),
        (["check", "ROBOTS", "http://[bad/x"], "invalid URL 'http://[bad/x'"),
        (["check", "missing.txt", "/x"], "cannot read 'missing.txt'"),
        (["check", "DIR", "/x"], "cannot read"),
        (["check", "ROBOTS", "/x", "--bogus"], "unrecognized arguments: --bogus"),
        (["check", "ROBOTS"], "give at least one URL"),
        (["check"], "check needs a robots.txt"),
        (["check", "ftp://example.com/robots.txt", "/x"], "scheme must be http or https"),
        (["check", "https://example.com/other.txt", "/x"], "is not a robots.txt URL"),
        (["check", "ROBOTS", "/x", "--agent", ""], "agent must not be empty"),
        (["check", "ROBOTS", "/x", "--timeout", "0"], "too small"),
        (["check", "ROBOTS", "/x", "--timeout", "1e400"], "not a finite number: '1e400'"),
        (["fetch", "--agent", AGENT, "--delay", "inf", "http://a.example/"],
         "not a finite number: 'inf'"),
        (["fetch", "http://example.com/"], "fetch needs --agent"),
        (["fetch", "--agent", "2bot", "http://example.com/"], "no product token"),
        (["fetch", "--agent", AGENT], "no URLs to fetch"),
        (["fetch", "--agent", AGENT, "-i", "missing.txt"], "cannot read 'missing.txt'"),
        (["fetch", "--agent", AGENT, "--store", "mongo://x", "http://a.example/"],
         "unknown store 'mongo://x'"),
        (["fetch", "--agent", AGENT, "--from", "nobody", "http://a.example/"], "--from wants"),
        (["fetch", "--agent", AGENT, "--delay", "soon", "http://a.example/"], "not a number"),
        (["fetch", "--agent", AGENT, "--concurrency", "0", "http://a.example/"], "too small"),
        (["fetch", "--agent", AGENT, "--out", "DIR", "http://a.example/"], "cannot write"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_user_mistakes_get_one_line_and_status_2(
    argv: list[str], expected: str, robots_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        str(robots_file) if a == "ROBOTS" else str(robots_file.parent) if a == "DIR" else a
        for a in argv
    ]
    code, out, err = run(argv, capsys)
    assert code == 2
    assert expected in one_error_line(err)
    assert out == ""


@pytest.mark.parametrize("text, said", [
    ("redis:/127.0.0.1", "'redis:/127.0.0.1' is no Redis URL: write redis://HOST"),
    ("redis:127.0.0.1:6379", "is no Redis URL: write redis://HOST"),
    ("redis+cluster:/127.0.0.1", "is no Redis URL: write redis+cluster://HOST"),
    ("unix:/run/redis.sock", "is no Redis URL: write unix:///PATH/TO/SOCKET"),
    ("redis:/user:hunter2@127.0.0.1", "'redis:***@127.0.0.1' is no Redis URL"),
    ("postgres:/db", "unknown store 'postgres:/db'"),
])
@pytest.mark.parametrize("command", [["fetch", "--agent", AGENT, "http://a.example/"],
                                     ["crawls"]])
def test_a_mistyped_store_url_is_refused_and_no_file_is_made_of_it(
    text: str, said: str, command: list[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    # A fleet whose --store lost a slash would each keep a SQLite file of its own.
    monkeypatch.chdir(tmp_path)
    code, out, err = run([*command, "--store", text], capsys)
    line = one_error_line(err)
    assert (code, out) == (2, ""), err
    assert said in line and line.endswith("(pick another with --store)") and "hunter2" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_file_whose_name_reads_as_a_url_is_named_with_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["crawls", "--store", "sqlite:odd:name.db"], capsys)
    assert (code, out) == (0, ""), err
    assert [p.name for p in tmp_path.iterdir()] == ["odd:name.db"]


def test_check_reports_each_bad_url_and_still_checks_the_rest(
    robots_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["check", str(robots_file), "ftp://a", "/private/x", "gopher://b"], capsys)
    assert code == 2
    assert err.count("robotgate: error: invalid URL") == 2 and "Traceback" not in err
    assert "DISALLOWED" in out


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--help"], capsys)
    assert code == 0 and "check" in out and "fetch" in out and "robotgate check -" in out
    code, out, _ = run(["fetch", "--help"], capsys)
    assert code == 0 and "--save-dir" in out and "--store" in out
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.startswith("robotgate ")
    code, _, err = run([], capsys)
    assert code == 2 and "usage" in err


async def test_check_fetches_a_robots_url_with_the_gate_policy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plans = [HostPlan("partial"), HostPlan("503_retry"), HostPlan("404")]
    async with BenchServer(plans) as srv:
        code, out, err = await run_async(
            ["check", srv.url(0, "/robots.txt"), srv.url(0, "/private/3"), "/page/1",
             "--agent", AGENT],
            capsys,
        )
        assert code == 1 and err == ""
        assert out.startswith(f"robots.txt    {srv.url(0, '/robots.txt')}: robots.txt answered 200")
        assert "DISALLOWED" in out and "'Disallow: /private/' (line 2)" in out
        log = srv.host_stats(0).robots_log
        assert [r.user_agent for r in log] == [AGENT]

        # 503: unreachable, so the whole site counts as disallowed (RFC 9309 2.3.1.4).
        code, out, _ = await run_async(
            ["check", srv.base_url(1), "/page/1", "--json"], capsys
        )
        assert code == 1
        (record,) = json_lines(out)
        assert record["allowed"] is False and record["outcome"] == "unreachable"
        assert record["robots_status"] == 503 and "503" in str(record["reason"])
        assert record["rule"] is None and record["line"] is None

        # Nothing listening: unreachable, so disallowed, and said so.
        code, out, _ = await run_async(["check", "http://127.0.0.1:1/robots.txt", "/x"], capsys)
        assert code == 1 and "could not be fetched" in out and "DISALLOWED" in out

        # 404: no robots.txt, everything allowed.
        code, out, err = await run_async(
            ["check", srv.base_url(2) + "/", "/private/1", srv.url(0, "/private/2")], capsys
        )
        assert code == 0 and "unavailable" in out
        assert err.strip() == (
            f"robotgate: note: {srv.url(0, '/private/2')} is not on {srv.base_url(2)}; "
            "its rules are applied all the same"
        )
        assert all(s.page_requests == 0 for s in srv.stats().values())


# -- fetch ------------------------------------------------------------------


@pytest.mark.slow
async def test_fetch_writes_json_lines_and_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plans = [HostPlan("partial"), HostPlan("partial"), HostPlan("500")]
    async with BenchServer(plans) as srv:
        urls = [srv.url(0, f"/page/{i}") for i in range(4)]
        urls += [srv.url(0, "/private/4"), srv.url(1, "/page/1"), srv.url(2, "/page/1")]
        code, out, err = await run_async(
            ["fetch", "--agent", AGENT, "--from", "ops@example.com", "--store", "memory",
             "--delay", "0.1", *urls],
            capsys,
        )
        stats = srv.stats()
    assert code == 0
    records = {str(r["url"]): r for r in json_lines(out)}
    assert set(records) == set(urls)
    page = records[urls[0]]
    assert page["status"] == 200 and page["final_url"] == urls[0]
    assert page["bytes"] == 1024 and isinstance(page["elapsed"], float)
    private = records[srv.url(0, "/private/4")]
    assert private["skipped"] == "disallowed" and private["line"] == 2
    assert "Disallow: /private/" in str(private["reason"])
    down = records[srv.url(2, "/page/1")]
    assert down["skipped"] == "disallowed" and "500" in str(down["reason"])
    # Polite: no disallowed page reached a server, robots.txt once per host, paced.
    assert sum(s.disallowed_page_requests for s in stats.values()) == 0
    assert [s.robots_requests for s in stats.values()] == [1, 1, 1]
    first = stats[srv.hosts[0]]
    assert first.page_requests == 4 and first.min_interval is not None
    assert first.min_interval >= 0.1
    assert {r.from_ for r in first.robots_log} == {"ops@example.com"}
    # Not a terminal: a summary, no progress bar.
    assert "\r" not in err and "[#" not in err and "[-" not in err
    header = err.splitlines()[0].split()
    assert header == ["host", "fetched", "failed", "refused", "unreachable", "errors", "mean",
                      "interval"]
    assert summary_row(err, srv.hosts[0]) == ["4", "1", "0"]
    assert "done in" in err and (
        "7 URLs: 5 fetched, 0 failed, 1 refused by robots.txt, 1 robots.txt unreachable, "
        "0 errors; 3 hosts") in err


@pytest.mark.slow
async def test_fetch_spreads_over_hosts_within_its_caps(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with BenchServer([HostPlan("allow", page_delay=0.05)] * 5) as srv:
        urls = [srv.url(h, f"/page/{i}") for i in range(6) for h in range(5)]
        code, out, _ = await run_async(
            ["fetch", "-a", AGENT, "--store", "memory", "--delay", "0", "--concurrency", "2",
             "--max-per-host", "2", "-q", *urls],
            capsys,
        )
        stats = srv.stats()
    assert code == 0
    assert sorted(str(r["url"]) for r in json_lines(out)) == sorted(urls)
    assert [s.page_requests for s in stats.values()] == [6] * 5
    assert max(s.max_concurrent_pages for s in stats.values()) <= 2
    # At most two requests in flight in all: no two 50 ms pages of three hosts overlap.
    starts = sorted(t for s in stats.values() for t in s.page_times)
    assert all(b - a >= 0.04 for a, b in zip(starts, starts[2:], strict=False))


async def test_fetch_reads_files_and_stdin_saves_bodies_and_writes_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async with BenchServer([HostPlan("partial")]) as srv:
        listing = tmp_path / "urls.txt"
        listing.write_text(
            f"# a comment\n\n{srv.url(0, '/page/1')}\n  {srv.url(0, '/private/4')}  \n"
            f"mailto:someone@example.com\n"
        )
        stdin = io.TextIOWrapper(io.BytesIO(f"{srv.url(0, '/page/2')}\n".encode()))
        monkeypatch.setattr(sys, "stdin", stdin)
        out_file = tmp_path / "out" / "pages.jsonl"
        out_file.parent.mkdir()
        saved = tmp_path / "saved"
        code, out, err = await run_async(
            ["fetch", "-a", AGENT, "--store", "memory", "--delay", "0", "-i", str(listing),
             "-", "-o", str(out_file), "--save-dir", str(saved), "--quiet"],
            capsys,
        )
    assert out == ""
    assert code == 2  # the mailto: line is bad input; the rest was still fetched
    assert one_error_line(err) == (
        "robotgate: error: invalid URL 'mailto:someone@example.com': "
        "scheme must be http or https"
    )
    records = {str(r["url"]): r for r in json_lines(out_file.read_text())}
    assert set(records) == {
        srv.url(0, "/page/1"), srv.url(0, "/private/4"), srv.url(0, "/page/2"),
        "mailto:someone@example.com",
    }
    assert "error" in records["mailto:someone@example.com"]
    body_path = Path(str(records[srv.url(0, "/page/1")]["saved"]))
    assert body_path.parent.parent == saved and body_path.suffix == ".html"
    assert body_path.read_bytes().startswith(b"<!doctype html>")
    assert len(body_path.read_bytes()) == records[srv.url(0, "/page/1")]["bytes"]
    assert "saved" not in records[srv.url(0, "/private/4")]
    assert not list(saved.rglob("*.part"))


@pytest.mark.slow
async def test_fetch_reports_network_errors_and_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with BenchServer([HostPlan("allow", page_delay=2.0)]) as srv:
        code, out, err = await run_async(
            ["fetch", "-a", AGENT, "--store", "memory", "--timeout", "0.3", "--retries", "0",
             srv.url(0, "/page/1")],
            capsys,
        )
    assert code == 1
    (record,) = json_lines(out)
    assert "timed out" in str(record["error"]) and "status" not in record
    assert "1 errors" in err


@pytest.mark.slow
async def test_fetch_default_store_is_sqlite_and_remembers_robots_txt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    store = default_store_path()
    assert store == tmp_path / "cache" / "robotgate" / "store.sqlite3"
    async with BenchServer([HostPlan("partial")]) as srv:
        for i in range(2):
            code, _, _ = await run_async(
                ["fetch", "-a", AGENT, "--delay", "0", "-q", srv.url(0, f"/page/{i}")], capsys
            )
            assert code == 0
        # Second run: robots.txt came from the store, not the site.
        assert srv.host_stats(0).robots_requests == 1
        assert srv.host_stats(0).page_requests == 2
        other = tmp_path / "elsewhere.sqlite3"
        code, _, _ = await run_async(
            ["fetch", "-a", AGENT, "--store", f"sqlite:{other}", "-q", srv.url(0, "/page/3")],
            capsys,
        )
        assert code == 0 and other.exists()
        assert srv.host_stats(0).robots_requests == 2
    assert store.exists()


def test_fetch_store_that_is_not_a_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not an SQLite file, not at all" * 100)
    code, out, err = run(
        ["fetch", "-a", AGENT, "--store", f"sqlite:{junk}", "http://127.0.0.1:9/"], capsys
    )
    assert code == 2 and out == ""
    assert str(junk) in one_error_line(err)


# -- fetch as a real process ------------------------------------------------


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env.pop("COLUMNS", None)
    env.pop("NO_COLOR", None)
    return env


def _read_all(fd: int, into: list[bytes]) -> None:
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the terminal's other side is closed
            return
        if not data:
            return
        into.append(data)


@pytest.mark.slow
async def test_fetch_in_a_terminal_shows_progress_and_summary(tmp_path: Path) -> None:
    async with BenchServer([HostPlan("partial"), HostPlan("partial")]) as srv:
        urls = [srv.url(h, p) for p in ("/page/1", "/page/2", "/private/4", "/page/3",
                                        "/page/5", "/page/6") for h in (0, 1)]
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        chunks: list[bytes] = []
        reader = threading.Thread(target=_read_all, args=(master, chunks), daemon=True)
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "robotgate", "fetch", "--agent", AGENT,
                "--delay", "0.15", *urls,
                stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=_env(tmp_path),
            )
            os.close(slave)
            slave = -1
            reader.start()
            code = await asyncio.wait_for(proc.wait(), 60)
            await asyncio.to_thread(reader.join, 10)
        finally:
            if slave >= 0:
                os.close(slave)
            os.close(master)
        stats = srv.stats()
    screen = b"".join(chunks).decode("utf-8", "replace")
    assert code == 0, screen
    assert "Traceback" not in screen
    # The bar: drawn in place with \r, cleared with ESC[K, counting up.
    assert "\r[" in screen and "\x1b[K" in screen
    assert "done, " in screen and "skipped" in screen and "errors" in screen
    assert "waiting" in screen and "/12 done" in screen
    # The JSON lines reach the terminal whole, each after the bar is cleared.
    records = []
    for row in screen.split("\n"):
        text = row.rsplit("\x1b[K", 1)[-1].strip("\r")
        if text.startswith("{"):
            records.append(json.loads(text))
    assert len(records) == 12
    assert sum(1 for r in records if r.get("skipped") == "disallowed") == 2
    # The summary table, per host.
    assert "host" in screen and "mean interval" in screen
    for h in (0, 1):
        assert summary_row(screen, srv.hosts[h]) == ["5", "1", "0"]
    assert "done in" in screen and "10 fetched, 0 failed, 2 refused by robots.txt" in screen
    assert sum(s.disallowed_page_requests for s in stats.values()) == 0
    assert (tmp_path / "cache" / "robotgate" / "store.sqlite3").exists()


@pytest.mark.slow
async def test_ctrl_c_stops_cleanly_and_keeps_every_line(tmp_path: Path) -> None:
    async with BenchServer([HostPlan("partial")]) as srv:
        urls = tmp_path / "urls.txt"
        urls.write_text("".join(srv.url(0, f"/page/{i}") + "\n" for i in range(40)))
        out = tmp_path / "out.jsonl"
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "robotgate", "fetch", "--agent", AGENT, "--delay", "0.2",
            "-i", str(urls), "--out", str(out),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=_env(tmp_path),
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if out.exists() and out.read_text().count("\n") >= 3:
                break
            await asyncio.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 30)
        requests = srv.host_stats(0).page_requests
        await asyncio.sleep(0.5)
        assert srv.host_stats(0).page_requests == requests  # nothing more after exit
    err = stderr.decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "interrupted" in err and "host" in err  # the summary still comes
    text = out.read_text()
    assert text.endswith("\n")
    records = json_lines(text)
    assert 3 <= len(records) < 40
    assert all(r["status"] == 200 for r in records)
    assert len(records) <= requests
    assert stdout == b""


@pytest.mark.slow
def test_python_dash_m_is_the_cli(tmp_path: Path, robots_file: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "robotgate", "check", str(robots_file), "/private/x", "--json"],
        capture_output=True, text=True, timeout=60, env=_env(tmp_path), check=False,
    )
    assert done.returncode == 1
    assert json.loads(done.stdout)["allowed"] is False
    done = subprocess.run(
        [sys.executable, "-m", "robotgate", "fetch", "--agent", AGENT, "--store", "memory",
         "-q", "nope"],
        capture_output=True, text=True, timeout=60, env=_env(tmp_path), check=False,
    )
    # A bad URL gets its line (stdout) and its error (stderr); the exit status says so.
    assert done.returncode == 2
    assert json.loads(done.stdout) == {
        "url": "nope", "error": "invalid URL 'nope': scheme must be http or https"
    }
    assert done.stderr.strip() == (
        "robotgate: error: invalid URL 'nope': scheme must be http or https"
    )


# -- check: usage preferences (issue 17) --------------------------------------


USAGE_ROBOTS = """\
User-agent: *
Content-Usage: / train-ai=n
Content-Usage: /ai-ok/ train-ai=y
Content-Signal: search=yes
Disallow: /never/
"""


def test_check_prints_usage_per_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text(USAGE_ROBOTS)
    code, out, _ = run(["check", str(robots), "/x", "/ai-ok/y", "/never/z"], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].split() == ["ALLOWED", "/x"]
    assert lines[2].split() == ["usage", "train-ai=n"]
    assert lines[3].split() == ["signals", "search=yes"]
    assert "'Content-Usage: / train-ai=n' (line 2)" in lines[4]
    assert "usage         train-ai=y" in out
    never = out.split("/never/z", 1)[1]
    assert "usage" not in never  # a URL that may not be crawled has no usage
    code, out, _ = run(["check", str(robots), "/x", "/never/z", "--json"], capsys)
    first, second = json_lines(out)
    assert first["usage"] == {"train-ai": False} and first["signals"] == {"search": True}
    assert "line 2" in str(first["usage_reason"])
    assert second["usage"] == {} and "signals" not in second


def test_check_usage_from_the_drafts_example(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text(USAGE_ROBOTS)
    code, out, _ = run(["check", str(robots), "/x", "/ai-ok/y", "--json"], capsys)
    assert code == 0
    first, second = json_lines(out)
    assert first["usage"] == {"train-ai": False} and second["usage"] == {"train-ai": True}


@pytest.mark.slow
async def test_fetch_lines_carry_the_combined_usage(capsys: pytest.CaptureFixture[str]) -> None:
    from aiohttp import web

    async def robots(request: web.Request) -> web.Response:
        return web.Response(text="User-agent: *\nContent-Usage: / train-ai=n\n")

    async def page(request: web.Request) -> web.Response:
        return web.Response(text="<p>x</p>", content_type="text/html",
                            headers={"Content-Usage": "search=y, train-ai=y"})

    app = web.Application()
    app.router.add_get("/robots.txt", robots)
    app.router.add_get("/{name}", page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        code, out, _ = await run_async(
            ["fetch", "-a", AGENT, "--store", "memory", "-q", f"http://127.0.0.1:{port}/a"],
            capsys,
        )
    finally:
        await runner.cleanup()
    (record,) = json_lines(out)
    assert code == 0
    # The most restrictive statement wins: robots.txt's train-ai=n over the header's y.
    assert record["usage"] == {"train-ai": False, "search": True}
