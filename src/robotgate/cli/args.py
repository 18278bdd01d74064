"""The ``robotgate`` command's arguments: the parser, value types, exit codes, messages."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from .. import __version__
from ..compiled import HOT_PATH, compiled_modules
from ..crawl import DEFAULT_RETRIES
from ..redaction import redact_text
from ..robots import DIALECTS

EXIT_OK = 0
EXIT_DISALLOWED = 1  # check: some URL is disallowed
EXIT_FAILED = 1  # fetch: some fetches failed
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
EXIT_TERMINATED = 143  # 128 + SIGTERM
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE

PROG = "robotgate"
MIB = 1024 * 1024
DEFAULT_MAX_BYTES = 10 * MIB
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_SIZE_RE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmg]?)(i?b?)", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": MIB, "g": 1024 * MIB}


class UsageError(Exception):
    """A user mistake: printed as one ``robotgate: error: ...`` line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting, so that ``main``
    reports every mistake the same way: one line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


# -- messages ------------------------------------------------------------------


def say(message: str) -> None:
    """One ``robotgate: ...`` line on stderr, redacted (never fails: stderr may be gone)."""
    with contextlib.suppress(OSError, ValueError):
        print(f"{PROG}: {redact_text(message)}", file=sys.stderr, flush=True)


def error(message: str) -> None:
    """One ``robotgate: error: ...`` line on stderr."""
    say(f"error: {message}")


def say_block(text: str) -> None:
    """Lines on stderr, redacted."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(redact_text(text) + "\n")
        sys.stderr.flush()


def display_path(path: Path) -> str:
    """``path`` with the home directory written ``~``."""
    home = str(Path.home()) if "HOME" in os.environ else None
    text = str(path)
    if home and text.startswith(home + os.sep):
        return "~" + text[len(home) :]
    return text


def default_store_path() -> Path:
    """The per-user SQLite file ``fetch`` keeps robots.txt and host state in.

    ``$XDG_CACHE_HOME/robotgate/store.sqlite3``, or ``~/.cache/robotgate/store.sqlite3``.
    """
    base = os.environ.get("XDG_CACHE_HOME", "")
    if base and os.path.isabs(base):
        root = Path(base)
    else:
        try:
            root = Path.home() / ".cache"
        except RuntimeError:  # no home directory to be found
            root = Path(os.getcwd()) / ".cache"
    return root / "robotgate" / "store.sqlite3"


# -- argument types --------------------------------------------------------------


def _agent(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("the agent must not be empty, e.g. 'MyBot/1.0'")
    if _CONTROL_RE.search(text):
        raise argparse.ArgumentTypeError(f"the agent {text!r} holds control characters")
    return text


def _from(text: str) -> str:
    if _CONTROL_RE.search(text) or "@" not in text:
        raise argparse.ArgumentTypeError(
            f"--from wants an e-mail address to reach the robot's operator, not {text!r}"
        )
    return text


def _number(kind: type[float] | type[int], low: float, strict: bool) -> Callable[[str], Any]:
    def parse(text: str) -> float | int:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value != value or value == float("inf"):
            raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
        if value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(
                f"{text} is too small (must be {'>' if strict else '>='} {low:g})"
            )
        return value

    return parse


def host_delay(text: str) -> tuple[str, float]:
    """``HOST=SECONDS`` of ``--host-delay``."""
    host, sep, value = text.partition("=")
    if not sep or not host.strip():
        raise argparse.ArgumentTypeError(f"give HOST=SECONDS, not {text!r}")
    return host.strip(), float(_number(float, 0.0, False)(value))


def size(text: str) -> int:
    """A byte count: ``1048576``, ``512k``, ``10MiB``, ``1.5M``, ``2GB`` (binary units)."""
    match = _SIZE_RE.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 10MiB, 512k, 1000000)")
    value = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is too small (must be at least 1 byte)")
    return value


seconds = _number(float, 0.0, strict=False)
positive_seconds = _number(float, 0.0, strict=True)
count = _number(int, 1, strict=False)
times = _number(int, 0, strict=False)


_EXAMPLES = """\
examples:
  robotgate demo              crawl a local multi-host site politely (no network needed)
  printf 'User-agent: *\\nDisallow: /private/\\n' | robotgate check - https://example.com/private/x
  robotgate check https://example.com/robots.txt /private/x /blog/ --agent MyBot --json
  robotgate fetch --agent 'MyBot/1.0 (+https://example.com/bot)' -i urls.txt -o pages.jsonl
"""


def _build() -> str:
    """Which build is installed: the hot path compiled with mypyc, or pure Python."""
    compiled = compiled_modules()
    if not compiled:
        return "pure Python"
    if len(compiled) == len(HOT_PATH):
        return "compiled"
    return f"partly compiled: {len(compiled)} of {len(HOT_PATH)} hot-path modules"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``robotgate`` command."""
    parser = Parser(
        prog=PROG,
        description="Polite crawling tools: check a robots.txt, fetch URLs politely, "
        "or watch the gate at work on a local demo site.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    version = f"%(prog)s {__version__} ({_build()})"
    parser.add_argument("--version", action="version", version=version)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_check(commands)
    _add_fetch(commands)
    _add_demo(commands)
    _add_report(commands)
    _add_crawls(commands)
    return parser


def _add_check(commands: Any) -> None:
    check = commands.add_parser(
        "check",
        help="explain a robots.txt: may the agent fetch these URLs, and why",
        description="For each URL: allowed or disallowed, and why (the rule, its line, "
        "the group), and what the site says about using it (Content-Usage, Content-Signal). "
        "Exit status 0 when all are allowed, 1 when any is disallowed, 2 on bad input.",
    )
    check.add_argument(
        "robots",
        metavar="ROBOTS",
        nargs="?",  # checked in the command, so that an unknown option is reported first
        help="a robots.txt file, '-' for standard input, or a site's robots.txt URL "
        "(fetched as the gate would: redirects, status codes, timeouts)",
    )
    check.add_argument(
        "urls", metavar="URL", nargs="*", default=[],
        help="absolute http(s) URLs or paths starting with '/'",
    )
    check.add_argument(
        "--agent", "-a", type=_agent, default="*", metavar="NAME",
        help="the robot's name or User-Agent, e.g. 'MyBot/1.0' (default: '*', a robot "
        "without a group of its own)",
    )
    check.add_argument("--json", action="store_true", help="one JSON object per line and URL")
    check.add_argument(
        "--crawl-delay", action="store_true",
        help="also show the agent's Crawl-delay and Request-rate",
    )
    check.add_argument("--sitemaps", action="store_true", help="also list the Sitemap URLs")
    check.add_argument(
        "--headers", metavar="FILE",
        help="also explain what a page's response headers say to the agent (X-Robots-Tag, "
        "Robots-Tag, TDMRep): a file of 'Name: value' lines, as 'curl -i' prints them "
        "(a body after them is read as the page), or '-'; ROBOTS may then be left out",
    )
    check.add_argument(
        "--html", metavar="FILE",
        help="also explain the robots and TDMRep meta tags in the head of an HTML page "
        "(a file, or '-'); ROBOTS may then be left out",
    )
    _add_dialect(check, "matching rules: RFC 9309 (default) or the 1994 standard as LWP "
                 "applies it")
    check.add_argument(
        "--from", dest="from_", type=_from, metavar="EMAIL",
        help="From header when ROBOTS is a URL",
    )
    check.add_argument(
        "--timeout", type=positive_seconds, default=30.0, metavar="SECONDS",
        help="give up fetching a robots.txt URL after this long (default 30)",
    )


def _add_dialect(command: argparse.ArgumentParser, text: str) -> None:
    command.add_argument("--dialect", choices=DIALECTS, default="rfc9309",
                         help=text)


def _add_fetch(commands: Any) -> None:
    fetch = commands.add_parser(
        "fetch",
        help="fetch URLs politely, one JSON line per URL",
        description="Fetch URLs through the gate: robots.txt is obeyed, each host is "
        "paced, 429/503 back off. Writes one JSON line per URL (in completion order): "
        "url, status, final_url, bytes, elapsed; or skipped and reason; or error. "
        "An invalid URL gets its own line and the run goes on. "
        "Exit status 0 when done, 1 when some fetches failed, 2 on bad input, "
        "130 when interrupted (every line written so far is kept).",
    )
    fetch.add_argument(
        "urls", metavar="URL", nargs="*", default=[],
        help="URLs to fetch; '-' reads URLs from standard input, one per line",
    )
    fetch.add_argument(
        "--agent", "-a", type=_agent, metavar="NAME",
        help="User-Agent, e.g. 'MyBot/1.0 (+URL)' (required)",
    )
    fetch.add_argument(
        "--robots-agent", type=_agent, metavar="NAME",
        help="the robot's name robots.txt groups are matched against (default: the "
        "User-Agent's product token, or the robot in 'Mozilla/5.0 (compatible; NAME/1.0)')",
    )
    fetch.add_argument(
        "--from", dest="from_", type=_from, metavar="EMAIL", help="From header (your e-mail)"
    )
    fetch.add_argument(
        "--input", "-i", action="append", default=[], metavar="FILE",
        help="read URLs from FILE, one per line ('#' comments and blank lines are "
        "skipped; '-' is standard input); repeatable",
    )
    fetch.add_argument(
        "--sitemaps", action="append", default=[], metavar="ORIGIN",
        help="also fetch the URLs listed in ORIGIN's sitemaps (those its robots.txt names, "
        "else /sitemap.xml), each sitemap read through the gate; repeatable",
    )
    fetch.add_argument(
        "--out", "-o", metavar="FILE", help="write the JSON lines to FILE (default: stdout)"
    )
    fetch.add_argument("--save-dir", metavar="DIR", help="save response bodies under DIR")
    fetch.add_argument(
        "--max-bytes", type=size, default=DEFAULT_MAX_BYTES, metavar="SIZE",
        help="read at most this much of each body, decoded (default 10MiB); a longer "
        "page is cut and its line says \"truncated\": true",
    )
    fetch.add_argument(
        "--store", metavar="STORE",
        help="where robots.txt and host state are kept between runs: sqlite:PATH, memory, "
        f"or redis://HOST[:PORT][/DB] (default: sqlite:{display_path(default_store_path())})",
    )
    fetch.add_argument(
        "--crawl", metavar="NAME",
        help="keep the crawl in the store under NAME: run again with the same NAME to "
        "resume it (URLs done are not fetched again; see 'robotgate crawls')",
    )
    fetch.add_argument(
        "--delay", type=seconds, default=1.0, metavar="SECONDS",
        help="minimum interval between two requests to one host (default 1; a larger "
        "Crawl-delay wins)",
    )
    fetch.add_argument(
        "--host-delay", type=host_delay, action="append", metavar="HOST=SECONDS",
        help="the interval for one host, or *.domain (repeatable; a larger Crawl-delay "
        "still wins)",
    )
    fetch.add_argument(
        "--max-per-host", type=count, default=1, metavar="N",
        help="requests in flight per host (default 1)",
    )
    fetch.add_argument(
        "--concurrency", type=count, default=16, metavar="N",
        help="requests in flight across all hosts (default 16)",
    )
    fetch.add_argument(
        "--timeout", type=positive_seconds, default=30.0, metavar="SECONDS",
        help="give up on a page not fully read this long after its request started "
        "(default 30; waiting for the host's turn does not count)",
    )
    fetch.add_argument(
        "--retries", type=times, default=DEFAULT_RETRIES, metavar="N",
        help="ask a URL again up to N times after a transient answer or error (429, "
        "503, a connection error, a timeout), each time after the host's back-off and "
        f"Retry-After; each attempt gets its line (default {DEFAULT_RETRIES})",
    )
    _add_dialect(fetch, "robots.txt matching rules (default rfc9309)")
    fetch.add_argument(
        "--tdmrep", action="store_true",
        help="fetch each origin's /.well-known/tdmrep.json (W3C TDMRep) once; each line "
        "says whether text-and-data-mining rights are reserved (\"tdm\")",
    )
    fetch.add_argument(
        "--log-every", type=positive_seconds, default=60.0, metavar="SECONDS",
        help="when stderr is no terminal, say how the crawl goes in one line this often "
        "(default 60)",
    )
    fetch.add_argument(
        "--quiet", "-q", action="store_true",
        help="no progress bar, no log lines and no summary on stderr"
    )


def _add_demo(commands: Any) -> None:
    demo = commands.add_parser(
        "demo",
        help="crawl a local multi-host site politely and show what the servers saw",
        description="Starts a small web server on loopback playing dozens of hosts "
        "(127.0.X.Y) with varied robots.txt files, crawls a few hundred URLs through "
        "gate.crawl, and prints what each host saw: robots.txt fetched once, disallowed "
        "URLs skipped with their reasons, requests spaced by the delay. No network needed.",
    )
    demo.add_argument("--quick", action="store_true",
                      help="fewer hosts and a shorter delay (a few seconds)")
    demo.add_argument("--hosts", type=count, metavar="N", help="hosts to play (default 36)")
    demo.add_argument("--delay", type=positive_seconds, metavar="SECONDS",
                      help="interval between two requests to one host (default 0.2)")
    demo.add_argument("--concurrency", type=count, default=8, metavar="N",
                      help="requests in flight across all hosts (default 8)")
    demo.add_argument("--quiet", "-q", action="store_true", help="no progress bar")


def _add_crawls(commands: Any) -> None:
    crawls = commands.add_parser(
        "crawls",
        help="list the named crawls a store keeps, with their counts, or drop one",
        description="Lists the crawls that 'robotgate fetch --crawl NAME' keeps in a store "
        "(queued, in flight, done, skipped, failed URLs), or NAME's alone. Exit status 0, "
        "1 when NAME is no crawl of the store, 2 on bad input.",
    )
    crawls.add_argument("name", metavar="NAME", nargs="?", help="one crawl")
    crawls.add_argument(
        "--store", metavar="STORE",
        help="the store: sqlite:PATH or memory "
        f"(default: sqlite:{display_path(default_store_path())})",
    )
    crawls.add_argument("--drop", action="store_true", help="forget crawl NAME")


def _add_report(commands: Any) -> None:
    report = commands.add_parser(
        "report",
        help="turn a crawl's JSON lines into one HTML page: a summary and each host's timeline",
        description="Reads the JSON lines of 'robotgate fetch' and writes one self-contained "
        "HTML file (nothing loaded from the network): a summary, then for each host a "
        "timeline of its requests with the interval it was owed, 429/503 answers, "
        "back-offs and robots.txt requests marked, and any gap shorter than the interval "
        "in red. Exit status 0 when no host was asked sooner than its interval allowed, "
        "1 when some was, 2 on bad input.",
    )
    report.add_argument(
        "crawl", metavar="CRAWL", nargs="?",
        help="the JSON lines of a crawl ('-' for standard input)",
    )
    report.add_argument(
        "--out", "-o", metavar="FILE",
        help="where the HTML goes ('-' for stdout; default: CRAWL with .html for its suffix)",
    )
    report.add_argument("--title", metavar="TEXT", help="the page's title")
    report.add_argument("--quiet", "-q", action="store_true",
                        help="no line on stderr saying what was written")
