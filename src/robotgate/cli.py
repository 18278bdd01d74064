"""The ``robotgate`` command: ``check`` a robots.txt, ``fetch`` URLs politely.

``robotgate check ROBOTS URL... [--agent NAME]`` says for each URL whether the
agent may fetch it and why (the rule, its line, the group); ROBOTS is a file,
``-`` for standard input, or a site's robots.txt URL (fetched with the gate's
policy).  Exit status: 0 all allowed, 1 any disallowed, 2 bad input.

``robotgate fetch --agent NAME (URL... | -i FILE | -)`` fetches URLs through a
:class:`~robotgate.RobotGate` (robots.txt, pacing, back-off) and writes one
JSON line per URL.  Exit status: 0 done, 1 some fetches failed, 2 bad input,
130 interrupted (Ctrl-C).

User mistakes (bad URLs, unreadable files, unknown options) are reported in
one line on stderr, never with a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import mimetypes
import os
import re
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NoReturn

import aiohttp

from . import __version__
from .agents import product_token
from .decision import Decision
from .gate import Disallowed, RobotGate
from .policy import FetchPolicy, outcome_decision
from .robots import DEFAULT_MAX_BYTES, RobotsTxt
from .store.base import RobotsEntry, Store, StoreError
from .store.memory import MemoryStore
from .store.sqlite import SQLiteStore
from .urls import InvalidURL, robots_url, split_origin

__all__ = ["default_store_path", "main"]

EXIT_OK = 0
EXIT_DISALLOWED = 1  # check: some URL is disallowed
EXIT_FAILED = 1  # fetch: some fetches failed
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
EXIT_TERMINATED = 143  # 128 + SIGTERM
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE

_PROG = "robotgate"
# Column width of the verdict tags in check's text output.
_TAG = 14
# URLs held in memory (read but not yet fetched) before reading input pauses.
_MAX_PENDING = 100_000
_PROGRESS_INTERVAL = 0.2
_SUMMARY_ROWS = 20
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
_UNSAFE_NAME_RE = re.compile(r"[^A-Za-z0-9._-]+")


class _UsageError(Exception):
    """A user mistake: printed as one ``robotgate: error: ...`` line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting, so that ``main``
    reports every mistake the same way: one line."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see '{self.prog} --help')")


# -- argument types --------------------------------------------------------


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
        if value < low or (strict and value == low) or value != value:  # NaN
            raise argparse.ArgumentTypeError(
                f"{text} is too small (must be {'>' if strict else '>='} {low:g})"
            )
        return value

    return parse


_seconds = _number(float, 0.0, strict=False)
_positive_seconds = _number(float, 0.0, strict=True)
_count = _number(int, 1, strict=False)


_EXAMPLES = """\
examples:
  printf 'User-agent: *\\nDisallow: /private/\\n' | robotgate check - https://example.com/private/x
  robotgate check https://example.com/robots.txt /private/x /blog/ --agent MyBot --json
  robotgate fetch --agent 'MyBot/1.0 (+https://example.com/bot)' -i urls.txt -o pages.jsonl
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``robotgate`` command."""
    parser = _Parser(
        prog=_PROG,
        description="Polite crawling tools: check a robots.txt, fetch URLs politely.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser(
        "check",
        help="explain a robots.txt: may the agent fetch these URLs, and why",
        description="For each URL: allowed or disallowed, and why (the rule, its line, "
        "the group). Exit status 0 when all are allowed, 1 when any is disallowed, "
        "2 on bad input.",
    )
    check.add_argument(
        "robots",
        metavar="ROBOTS",
        nargs="?",  # checked in _cmd_check, so that an unknown option is reported first
        help="a robots.txt file, '-' for standard input, or a site's robots.txt URL "
        "(fetched as the gate would: redirects, status codes, timeouts)",
    )
    check.add_argument(
        "urls",
        metavar="URL",
        nargs="*",
        default=[],
        help="absolute http(s) URLs or paths starting with '/'",
    )
    check.add_argument(
        "--agent",
        "-a",
        type=_agent,
        default="*",
        metavar="NAME",
        help="the robot's name or User-Agent, e.g. 'MyBot/1.0' (default: '*', a robot "
        "without a group of its own)",
    )
    check.add_argument("--json", action="store_true", help="one JSON object per line and URL")
    check.add_argument(
        "--crawl-delay",
        action="store_true",
        help="also show the agent's Crawl-delay and Request-rate",
    )
    check.add_argument("--sitemaps", action="store_true", help="also list the Sitemap URLs")
    check.add_argument(
        "--dialect",
        choices=("rfc9309", "classic"),
        default="rfc9309",
        help="matching rules: RFC 9309 (default) or the 1994 standard as LWP applies it",
    )
    check.add_argument(
        "--from",
        dest="from_",
        type=_from,
        metavar="EMAIL",
        help="From header when ROBOTS is a URL",
    )
    check.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="give up fetching a robots.txt URL after this long (default 30)",
    )

    fetch = commands.add_parser(
        "fetch",
        help="fetch URLs politely, one JSON line per URL",
        description="Fetch URLs through the gate: robots.txt is obeyed, each host is "
        "paced, 429/503 back off. Writes one JSON line per URL (in completion order): "
        "url, status, final_url, bytes, elapsed; or skipped and reason; or error. "
        "Exit status 0 when done, 1 when some fetches failed, 2 on bad input, "
        "130 when interrupted (every line written so far is kept).",
    )
    fetch.add_argument(
        "urls",
        metavar="URL",
        nargs="*",
        default=[],
        help="URLs to fetch; '-' reads URLs from standard input, one per line",
    )
    fetch.add_argument(
        "--agent", "-a", type=_agent, metavar="NAME",
        help="User-Agent, e.g. 'MyBot/1.0 (+URL)' (required)",
    )
    fetch.add_argument(
        "--from", dest="from_", type=_from, metavar="EMAIL", help="From header (your e-mail)"
    )
    fetch.add_argument(
        "--input",
        "-i",
        action="append",
        default=[],
        metavar="FILE",
        help="read URLs from FILE, one per line ('#' comments and blank lines are "
        "skipped; '-' is standard input); repeatable",
    )
    fetch.add_argument(
        "--out", "-o", metavar="FILE", help="write the JSON lines to FILE (default: stdout)"
    )
    fetch.add_argument("--save-dir", metavar="DIR", help="save response bodies under DIR")
    fetch.add_argument(
        "--store",
        metavar="STORE",
        help="where robots.txt and host state are kept between runs: sqlite:PATH, memory, "
        f"or redis://HOST[:PORT][/DB] (default: sqlite:{_display_path(default_store_path())})",
    )
    fetch.add_argument(
        "--delay",
        type=_seconds,
        default=1.0,
        metavar="SECONDS",
        help="minimum interval between two requests to one host (default 1; a larger "
        "Crawl-delay wins)",
    )
    fetch.add_argument(
        "--max-per-origin",
        type=_count,
        default=1,
        metavar="N",
        help="requests in flight per host (default 1)",
    )
    fetch.add_argument(
        "--concurrency",
        type=_count,
        default=16,
        metavar="N",
        help="requests in flight across all hosts (default 16)",
    )
    fetch.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="give up on a connection that stays silent this long (default 30)",
    )
    fetch.add_argument(
        "--dialect",
        choices=("rfc9309", "classic"),
        default="rfc9309",
        help="robots.txt matching rules (default rfc9309)",
    )
    fetch.add_argument(
        "--quiet", "-q", action="store_true", help="no progress bar and no summary on stderr"
    )
    return parser


# -- entry point -----------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``robotgate`` command with ``argv`` (default: ``sys.argv[1:]``).

    Returns the exit status; user mistakes are reported in one line on stderr.
    """
    parser = build_parser()
    try:
        try:
            args, unknown = parser.parse_known_args(argv)
        except SystemExit as exc:  # --help and --version
            return exc.code if isinstance(exc.code, int) else EXIT_OK
        if unknown:
            # Before "missing argument" errors: a mistyped option is the likelier mistake.
            command = f"{_PROG} {args.command}" if args.command else _PROG
            raise _UsageError(
                f"unrecognized arguments: {' '.join(unknown)} (see '{command} --help')"
            )
        if args.command == "check":
            return _cmd_check(args)
        if args.command == "fetch":
            return _cmd_fetch(args)
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    except _UsageError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _say("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `robotgate check ... | head -1`: the reader left
        _silence_stdout(sys.stdout)
        return EXIT_BROKEN_PIPE


def _say(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(f"{_PROG}: {message}", file=sys.stderr, flush=True)


def _error(message: str) -> None:
    _say(f"error: {message}")


def _display_path(path: Path) -> str:
    home = str(Path.home()) if "HOME" in os.environ else None
    text = str(path)
    if home and text.startswith(home + os.sep):
        return "~" + text[len(home) :]
    return text


# -- check -----------------------------------------------------------------


@dataclass
class _RobotsSource:
    """Where the rules came from, and what fetching them gave (for a URL)."""

    name: str
    rules: RobotsTxt | None
    verdict: Decision | None = None  # set when the fetch outcome decides every URL
    entry: RobotsEntry | None = None
    lines: list[str] = field(default_factory=list)


def _cmd_check(args: argparse.Namespace) -> int:
    agent: str = args.agent
    if args.robots is None:
        raise _UsageError(
            f"check needs a robots.txt (a file, - or a URL) and URLs (see '{_PROG} check --help')"
        )
    if not args.urls and not (args.crawl_delay or args.sitemaps):
        raise _UsageError("give at least one URL to check (or --crawl-delay / --sitemaps)")
    targets: list[str] = []
    bad = 0
    for url in args.urls:
        try:
            targets.append(_check_target(url))
        except InvalidURL as exc:
            _error(str(exc))
            bad += 1

    robots_arg: str = args.robots
    if robots_arg.lower().startswith(("http://", "https://")) or "://" in robots_arg:
        origin = _robots_origin(robots_arg)
        for target in targets:
            if not target.startswith("/") and split_origin(target)[0] != origin:
                _say(f"note: {target} is not on {origin}; its rules are applied all the same")
        try:
            source = asyncio.run(_fetch_robots_source(args, origin))
        except StoreError as exc:  # pragma: no cover - the memory store does not fail
            raise _UsageError(str(exc)) from None
    else:
        body = _read_robots_file(robots_arg)
        site = _first_origin(targets)
        url = robots_url(site) if site else None
        rules = RobotsTxt.parse(body, dialect=args.dialect, url=url)
        name = "standard input" if robots_arg == "-" else robots_arg
        source = _RobotsSource(name, rules, lines=_source_lines(body))

    emit = _emit_json if args.json else _emit_text
    any_disallowed = False
    if source.entry is not None and not args.json:
        entry = source.entry
        where = entry.final_url or robots_url(entry.origin)
        print(f"{'robots.txt':<{_TAG}}{where}: {entry.detail or entry.outcome}")
    extra = _extras(source, agent, args)
    for target in targets:
        if source.verdict is not None:
            decision = source.verdict
        else:
            assert source.rules is not None
            decision = source.rules.decide(target, agent)
        any_disallowed |= not decision.allowed
        # JSON lines each carry the extras; text shows them once, at the end.
        emit(source, agent, target, decision, extra if args.json else {})
    if extra and (not targets or not args.json):
        emit(source, agent, None, None, extra)
    sys.stdout.flush()
    if bad:
        return EXIT_USAGE
    return EXIT_DISALLOWED if any_disallowed else EXIT_OK


def _check_target(text: str) -> str:
    """An absolute http(s) URL or a path; raises :class:`InvalidURL` otherwise."""
    if text.startswith("/") and not text.startswith("//"):
        return text
    if "://" not in text:
        raise InvalidURL(text, "give an absolute http(s) URL or a path starting with '/'")
    split_origin(text)
    return text


def _first_origin(targets: Sequence[str]) -> str | None:
    for target in targets:
        if not target.startswith("/"):
            return split_origin(target)[0]
    return None


def _robots_origin(text: str) -> str:
    """The origin whose robots.txt a ROBOTS URL names."""
    try:
        origin, rest = split_origin(text)
    except InvalidURL as exc:
        raise _UsageError(str(exc)) from None
    path = rest.split("#", 1)[0]
    if path not in ("", "/", "/robots.txt"):
        raise _UsageError(
            f"{text!r} is not a robots.txt URL: robots.txt lives at the root of a site "
            f"({origin}/robots.txt); to check another file, download it and pass the file"
        )
    return origin


def _read_robots_file(path: str) -> bytes:
    limit = DEFAULT_MAX_BYTES
    try:
        if path == "-":
            stdin = _stdin_bytes()
            if sys.stdin.isatty():
                _say("reading robots.txt from the terminal; end it with Ctrl-D")
            data = stdin.read(limit + 1)
        else:
            with open(path, "rb") as f:
                data = f.read(limit + 1)
    except OSError as exc:
        name = "standard input" if path == "-" else repr(path)
        raise _UsageError(f"cannot read {name}: {exc.strerror or exc}") from None
    if len(data) > limit:
        _say(f"note: only the first {limit} bytes are read, as RFC 9309 2.5 allows")
        data = data[:limit]
    return data


def _stdin_bytes() -> IO[bytes]:
    stream: IO[bytes] | None = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise _UsageError("cannot read standard input: it is closed")
    return stream


def _source_lines(body: bytes) -> list[str]:
    """The file's lines numbered as the parser numbers them (for quoting a rule's line)."""
    text = body.decode("utf-8", "replace")
    if text[:1] == "\ufeff":
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


async def _fetch_robots_source(args: argparse.Namespace, origin: str) -> _RobotsSource:
    agent: str = args.agent
    # A bare "*" is no User-Agent; the request then names this tool.
    header = agent if product_token(agent) else f"robotgate-check/{__version__}"
    policy = FetchPolicy(timeout=args.timeout, forbidden_disallows_all=args.dialect == "classic")
    probe = origin + "/"
    # A memory store: a debugging tool must look at the file as it is now.
    async with RobotGate(
        header, from_=args.from_, delay=0, store=MemoryStore(), policy=policy,
        dialect=args.dialect,
    ) as gate:
        entry = await gate.robots_entry(probe)
        verdict = outcome_decision(entry)
        rules = None
        if verdict is None:
            rules = await gate.rules(probe)
            if rules is None:  # refetched in between (zero freshness), with another outcome
                entry = await gate.robots_entry(probe)
                verdict = outcome_decision(entry) or Decision(True, entry.detail)
    lines = _source_lines(entry.body) if entry.body else []
    return _RobotsSource(robots_url(origin), rules, verdict, entry, lines)


def _extras(source: _RobotsSource, agent: str, args: argparse.Namespace) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    rules = source.rules
    if args.crawl_delay:
        delay = rules.crawl_delay(agent) if rules is not None else None
        rate = rules.request_rate(agent) if rules is not None else None
        extra["crawl_delay"] = delay
        extra["request_rate"] = (
            {"requests": rate.requests, "seconds": rate.seconds} if rate is not None else None
        )
    if args.sitemaps:
        extra["sitemaps"] = rules.sitemaps if rules is not None else []
    return extra


def _rule_text(decision: Decision) -> str | None:
    rule = decision.rule
    if rule is None:
        return None
    return f"{'Allow' if rule.allow else 'Disallow'}: {rule.pattern}"


def _emit_json(
    source: _RobotsSource,
    agent: str,
    url: str | None,
    decision: Decision | None,
    extra: dict[str, Any],
) -> None:
    record: dict[str, Any] = {}
    if url is not None and decision is not None:
        record = {
            "url": url,
            "allowed": decision.allowed,
            "rule": _rule_text(decision),
            "line": decision.line,
            "group": list(decision.group) if decision.group is not None else None,
            "reason": decision.reason,
            "outcome": decision.outcome,
        }
    record["agent"] = agent
    record["robots"] = source.name
    if source.entry is not None:
        record["robots_outcome"] = source.entry.outcome
        record["robots_status"] = source.entry.status
        record["robots_detail"] = source.entry.detail
    record.update(extra)
    print(json.dumps(record))


def _emit_text(
    source: _RobotsSource,
    agent: str,
    url: str | None,
    decision: Decision | None,
    extra: dict[str, Any],
) -> None:
    pad = " " * _TAG
    if url is not None and decision is not None:
        tag = "ALLOWED" if decision.allowed else "DISALLOWED"
        print(f"{tag:<{_TAG}}{url}")
        print(f"{pad}{decision.reason}")
        line = decision.line
        if line is not None and 0 < line <= len(source.lines):
            quoted = source.lines[line - 1].strip()
            if quoted and quoted != _rule_text(decision):
                print(f"{pad}line {line}: {quoted}")
    if "crawl_delay" in extra:
        delay = extra["crawl_delay"]
        rate = extra["request_rate"]
        print(f"{'crawl-delay':<{_TAG}}" + (f"{delay:g}s" if delay is not None else "none")
              + f" for {agent!r}")
        if rate is not None:
            print(f"{'request-rate':<{_TAG}}{rate['requests']} per {rate['seconds']:g}s")
    for sitemap in extra.get("sitemaps", ()):
        print(f"{'sitemap':<{_TAG}}{sitemap}")
    if "sitemaps" in extra and not extra["sitemaps"]:
        print(f"{'sitemap':<{_TAG}}none")


# -- fetch: set-up -----------------------------------------------------------


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


def _make_store(spec: str | None) -> Store:
    if spec is None or spec in ("sqlite", "sqlite:"):
        path = default_store_path()
    elif spec == "memory":
        return MemoryStore()
    elif spec.startswith("sqlite:"):
        path = Path(os.path.expanduser(spec[len("sqlite:") :]))
    elif spec.startswith(("redis://", "rediss://", "unix://")):
        try:
            from .store.redis import RedisStore
        except ImportError:
            raise _UsageError(
                "the redis store needs the redis package: pip install 'robotgate[redis]'"
            ) from None
        try:
            return RedisStore(spec)
        except ValueError as exc:
            raise _UsageError(f"bad --store {spec!r}: {exc}") from None
    else:
        raise _UsageError(
            f"unknown store {spec!r}: use sqlite:PATH, memory, or redis://HOST[:PORT][/DB]"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _UsageError(
            f"cannot create {str(path.parent)!r} for the store: {exc.strerror or exc} "
            "(pick another with --store)"
        ) from None
    return SQLiteStore(path)


@dataclass
class _Source:
    """URLs from the command line, or lines of a file or standard input."""

    name: str
    urls: list[str] | None = None
    stream: IO[bytes] | None = None
    owned: bool = False  # opened here, so closed here


def _open_sources(args: argparse.Namespace) -> list[_Source]:
    sources: list[_Source] = []
    stdin_used = False

    def stdin() -> _Source:
        nonlocal stdin_used
        stdin_used = True
        return _Source("standard input", stream=_stdin_bytes())

    try:
        for arg in args.urls:
            if arg == "-":
                sources.append(stdin())
            elif sources and sources[-1].urls is not None:
                sources[-1].urls.append(arg)
            else:
                sources.append(_Source("the command line", urls=[arg]))
        for path in args.input:
            if path == "-":
                sources.append(stdin())
                continue
            try:
                stream = open(path, "rb")  # noqa: SIM115 - closed by _close_sources
            except OSError as exc:
                raise _UsageError(f"cannot read {path!r}: {exc.strerror or exc}") from None
            sources.append(_Source(repr(path), stream=stream, owned=True))
    except BaseException:
        _close_sources(sources)
        raise
    if not sources:
        raise _UsageError("no URLs to fetch: give URLs, -i FILE, or - to read standard input")
    if stdin_used and sys.stdin.isatty():
        _say("reading URLs from the terminal, one per line; end with Ctrl-D")
    return sources


def _close_sources(sources: Sequence[_Source]) -> None:
    for source in sources:
        if source.owned and source.stream is not None:
            source.stream.close()


def _cmd_fetch(args: argparse.Namespace) -> int:
    if args.agent is None:
        raise _UsageError(
            "fetch needs --agent NAME: the User-Agent that tells sites who is crawling, "
            "e.g. --agent 'MyBot/1.0 (+https://example.com/bot)'"
        )
    if not product_token(args.agent):
        raise _UsageError(
            f"the agent {args.agent!r} has no product token for robots.txt groups to name: "
            "start it with letters, e.g. 'MyBot/1.0'"
        )
    sources = _open_sources(args)
    out: IO[str] | None = None
    try:
        # Command-line URLs are checked before anything is fetched.
        bad = 0
        for source in sources:
            for url in source.urls or ():
                try:
                    split_origin(url)
                except InvalidURL as exc:
                    _error(str(exc))
                    bad += 1
        if bad:
            return EXIT_USAGE
        store = _make_store(args.store)
        save_dir: Path | None = None
        if args.save_dir:
            save_dir = Path(args.save_dir)
            try:
                save_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise _UsageError(
                    f"cannot create {args.save_dir!r}: {exc.strerror or exc}"
                ) from None
        if args.out and args.out != "-":
            try:
                out = open(args.out, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
            except OSError as exc:
                raise _UsageError(f"cannot write {args.out!r}: {exc.strerror or exc}") from None
        return asyncio.run(_fetch_main(args, sources, store, out or sys.stdout, save_dir))
    finally:
        _close_sources(sources)
        if out is not None:
            out.close()


# -- fetch: the crawl ---------------------------------------------------------


class _LineReader:
    """Lines of a stream, read on a daemon thread so a slow pipe never blocks the loop.

    At most ``room`` lines wait in memory; the thread pauses when they are not taken.
    """

    def __init__(self, stream: IO[bytes], room: int = 10_000) -> None:
        self._stream = stream
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[bytes | OSError | None] = asyncio.Queue()
        self._room = threading.Semaphore(room)
        self._stop = threading.Event()
        # Daemon: a thread blocked reading a terminal must not keep the process alive.
        self._thread = threading.Thread(target=self._run, name="robotgate-input", daemon=True)
        self._thread.start()

    def _put(self, item: bytes | OSError | None) -> bool:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: we were stopped
            return False
        return True

    def _run(self) -> None:
        try:
            for line in self._stream:
                while not self._room.acquire(timeout=0.2):
                    if self._stop.is_set():
                        return
                if self._stop.is_set() or not self._put(line):
                    return
        except (OSError, ValueError) as exc:  # ValueError: the file was closed under us
            self._put(exc if isinstance(exc, OSError) else OSError(str(exc)))
            return
        self._put(None)

    async def lines(self) -> AsyncIterator[str]:
        while True:
            item = await self._queue.get()
            if item is None:
                return
            if isinstance(item, OSError):
                raise item
            self._room.release()
            yield item.decode("utf-8", "replace")

    def stop(self) -> None:
        self._stop.set()


@dataclass
class _Tally:
    """What happened on one host, for the summary table."""

    pages: int = 0
    skipped: int = 0
    errors: int = 0
    starts: set[float] = field(default_factory=set)

    def mean_interval(self) -> float | None:
        times = sorted(self.starts)
        if len(times) < 2:
            return None
        return (times[-1] - times[0]) / (len(times) - 1)


class _Output:
    """JSON lines, each written whole and flushed, so an interrupted run keeps them all."""

    def __init__(self, stream: IO[str], on_broken: Callable[[OSError], None]) -> None:
        self.stream = stream
        self.progress: _Progress | None = None
        # The bar is on the same terminal: clear it before a line, redraw after.
        self.shares_terminal = stream is sys.stdout and _isatty(stream)
        self.broken: OSError | None = None
        self._on_broken = on_broken

    def write(self, record: dict[str, Any]) -> None:
        if self.broken is not None:
            return
        line = json.dumps(record) + "\n"
        progress = self.progress if self.shares_terminal else None
        if progress is not None:
            progress.clear()
        try:
            self.stream.write(line)
            self.stream.flush()
        except OSError as exc:
            self.broken = exc
            self._on_broken(exc)
            return
        if progress is not None:
            progress.draw()


def _isatty(stream: IO[str] | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):
        return False


class _Fetcher:
    """Feeds URLs to per-host workers: at most ``concurrency`` hosts at once, each
    with up to ``max_per_origin`` requests, so one slow host never holds up the rest."""

    def __init__(
        self,
        gate: RobotGate,
        output: _Output,
        sources: Sequence[_Source],
        *,
        concurrency: int,
        max_per_origin: int,
        timeout: float,
        save_dir: Path | None,
    ) -> None:
        self.gate = gate
        self.output = output
        self.sources = sources
        self.concurrency = concurrency
        self.max_per_origin = max_per_origin
        # Connect and read timeouts only: a total would count the pacing wait too.
        self.timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=timeout)
        self.save_dir = save_dir
        self.pending: dict[str, deque[str]] = {}
        self.pending_count = 0
        self.ready: deque[str] = deque()  # hosts with URLs, waiting for a worker
        self.queued: set[str] = set()
        self.workers: dict[str, asyncio.Task[None]] = {}
        self.tallies: dict[str, _Tally] = {}
        self.read = 0
        self.fetched = 0
        self.skipped = 0
        self.errors = 0
        self.invalid = 0
        self.input_error: str | None = None
        self.input_done = False
        self.started = time.monotonic()
        self._finished = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._stopping = False
        self._failure: BaseException | None = None
        self._readers: list[_LineReader] = []

    # -- counters for the progress bar

    @property
    def finished(self) -> int:
        return self.fetched + self.skipped + self.errors + self.invalid

    def hosts_waiting(self) -> int:
        """Hosts with URLs left that are paced, backing off, or queued for a worker."""
        waiting = len(self.ready)
        for origin in self.workers:
            if self.gate.host_wait(origin) > 0:
                waiting += 1
        return waiting

    # -- running

    async def run(self) -> None:
        feed = asyncio.get_running_loop().create_task(self._feed())
        feed.add_done_callback(self._feed_done)
        try:
            await self._finished.wait()
            if self._failure is not None:
                raise self._failure
        finally:
            await self._shutdown(feed)

    async def _shutdown(self, feed: asyncio.Task[None]) -> None:
        self._stopping = True
        for reader in self._readers:
            reader.stop()
        tasks = [feed, *self.workers.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def stop(self) -> None:
        """Stop taking up URLs (the output broke); :meth:`run` returns soon."""
        self._finished.set()

    async def _feed(self) -> None:
        for source in self.sources:
            try:
                async for line in self._lines(source):
                    url = line.strip()
                    if not url or url.startswith("#"):
                        continue
                    self.read += 1
                    try:
                        origin = split_origin(url)[0]
                    except InvalidURL as exc:
                        self.invalid += 1
                        _error(str(exc))
                        self.output.write({"url": url, "error": str(exc)})
                        continue
                    await self._room.wait()
                    self._add(origin, url)
            except OSError as exc:
                self.input_error = f"cannot read {source.name}: {exc.strerror or exc}"
                _error(self.input_error)

    async def _lines(self, source: _Source) -> AsyncIterator[str]:
        if source.urls is not None:
            for url in source.urls:
                yield url
            return
        assert source.stream is not None
        reader = _LineReader(source.stream)
        self._readers.append(reader)
        try:
            async for line in reader.lines():
                yield line
        finally:
            reader.stop()

    def _feed_done(self, task: asyncio.Task[None]) -> None:
        self.input_done = True
        if not task.cancelled() and task.exception() is not None:
            self._fail(task.exception())
        self._check_done()

    def _fail(self, exc: BaseException | None) -> None:
        if self._failure is None and exc is not None:
            self._failure = exc
        self._finished.set()

    def _check_done(self) -> None:
        if self.input_done and not self.workers and not self.ready:
            self._finished.set()

    def _add(self, origin: str, url: str) -> None:
        urls = self.pending.get(origin)
        if urls is None:
            urls = self.pending[origin] = deque()
        urls.append(url)
        self.pending_count += 1
        if self.pending_count >= _MAX_PENDING:
            self._room.clear()
        if origin not in self.workers and origin not in self.queued:
            self._schedule(origin)

    def _schedule(self, origin: str) -> None:
        if len(self.workers) < self.concurrency:
            self._start(origin)
        else:
            self.ready.append(origin)
            self.queued.add(origin)

    def _start(self, origin: str) -> None:
        task = asyncio.get_running_loop().create_task(self._work(origin))
        self.workers[origin] = task
        task.add_done_callback(lambda t: self._worker_done(origin, t))

    def _worker_done(self, origin: str, task: asyncio.Task[None]) -> None:
        del self.workers[origin]
        if self._stopping:
            return
        if not task.cancelled() and task.exception() is not None:
            self._fail(task.exception())
            return
        if self.pending.get(origin):
            # More URLs came in after the worker ran dry: back of the line, so
            # that hosts already waiting for a worker go first.
            self.ready.append(origin)
            self.queued.add(origin)
        else:
            self.pending.pop(origin, None)
        while self.ready and len(self.workers) < self.concurrency:
            nxt = self.ready.popleft()
            self.queued.discard(nxt)
            self._start(nxt)
        self._check_done()

    async def _work(self, origin: str) -> None:
        urls = self.pending[origin]

        async def drain() -> None:
            while urls:
                url = urls.popleft()
                self.pending_count -= 1
                if self.pending_count < _MAX_PENDING:
                    self._room.set()
                await self._fetch_one(origin, url)

        lanes = min(self.max_per_origin, len(urls))
        if lanes <= 1:
            await drain()
        else:
            await asyncio.gather(*(drain() for _ in range(lanes)))

    async def _fetch_one(self, origin: str, url: str) -> None:
        tally = self.tallies.get(origin)
        if tally is None:
            tally = self.tallies[origin] = _Tally()
        record: dict[str, Any] = {"url": url}
        began = time.monotonic()
        try:
            async with self.gate.fetch(url, timeout=self.timeout) as resp:
                body = await resp.read()
            record["status"] = resp.status
            record["final_url"] = str(resp.url)
            record["bytes"] = len(body)
            record["content_type"] = resp.headers.get("Content-Type")
            if self.save_dir is not None:
                record["saved"] = await self._save(str(resp.url), body, resp.content_type)
            self.fetched += 1
            tally.pages += 1
            state = self.gate.host_state(url)
            if state is not None and state.last_visit is not None:
                tally.starts.add(state.last_visit)
        except Disallowed as no:
            decision = no.decision
            record["skipped"] = "disallowed"
            record["reason"] = decision.reason
            record["rule"] = _rule_text(decision)
            record["line"] = decision.line
            if no.url != url:
                record["final_url"] = no.url  # a redirect led to a disallowed URL
            self.skipped += 1
            tally.skipped += 1
        except asyncio.TimeoutError:
            record["error"] = f"timed out: no answer within {self.timeout.sock_read:g}s"
            self.errors += 1
            tally.errors += 1
        except (aiohttp.ClientError, OSError, InvalidURL, StoreError) as exc:
            record["error"] = f"{type(exc).__name__}: {exc}".rstrip(": ")
            self.errors += 1
            tally.errors += 1
        record["elapsed"] = round(time.monotonic() - began, 3)
        self.output.write(record)

    async def _save(self, url: str, body: bytes, content_type: str) -> str:
        assert self.save_dir is not None
        path = self.save_dir / _save_name(url, content_type)
        await asyncio.to_thread(_write_atomically, path, body)
        return str(path)


def _save_name(url: str, content_type: str) -> str:
    """``HOST_PORT/readable-path-HASH.ext``: unique per URL, safe on any file system."""
    origin, rest = split_origin(url)
    host = _UNSAFE_NAME_RE.sub("_", origin.split("://", 1)[1]).strip("._") or "host"
    slug = _UNSAFE_NAME_RE.sub("_", rest.split("#", 1)[0]).strip("._")[:80] or "index"
    digest = hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    ext = mimetypes.guess_extension(content_type or "") or ""
    if ext and slug.endswith(ext):
        ext = ""
    return os.path.join(host, f"{slug}-{digest}{ext}")


def _write_atomically(path: Path, body: bytes) -> None:
    # Write then rename: an interrupted run never leaves half a file.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_bytes(body)
    os.replace(tmp, path)


class _Progress:
    """A one-line progress bar on a terminal's stderr."""

    def __init__(self, stream: IO[str], fetcher: _Fetcher) -> None:
        self.stream = stream
        self.fetcher = fetcher
        self._task: asyncio.Task[None] | None = None
        self._shown = False

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            self.draw()
            await asyncio.sleep(_PROGRESS_INTERVAL)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.clear()

    def render(self, width: int) -> str:
        f = self.fetcher
        total = f.read
        done = f.finished
        more = "" if f.input_done else "+"
        waiting = f.hosts_waiting()
        tail = (
            f" {done}/{total}{more} done, {f.skipped} skipped, {f.errors} errors, "
            f"{waiting} host{'' if waiting == 1 else 's'} waiting, "
            f"{_clock(time.monotonic() - f.started)}"
        )
        cells = max(10, min(30, width - len(tail) - 3))
        filled = cells * done // total if total else 0
        bar = f"[{'#' * filled}{'-' * (cells - filled)}]"
        return (bar + tail)[: max(1, width - 1)]

    def draw(self) -> None:
        try:
            width = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError):
            width = 80
        try:
            self.stream.write("\r" + self.render(width) + "\x1b[K")
            self.stream.flush()
            self._shown = True
        except (OSError, ValueError):
            pass

    def clear(self) -> None:
        if self._shown:
            with contextlib.suppress(OSError, ValueError):
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            self._shown = False


def _clock(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _summary(fetcher: _Fetcher, interrupted: bool) -> str:
    """The table printed at the end: per host pages, skipped by robots.txt, errors,
    and the mean interval between the starts of two page requests."""
    rows = sorted(
        fetcher.tallies.items(), key=lambda kv: (-(kv[1].pages + kv[1].skipped), kv[0])
    )
    shown = rows[:_SUMMARY_ROWS]
    width = max([len("host"), *(len(origin) for origin, _ in shown)])
    head = f"{'host':<{width}}  {'pages':>6}  {'skipped':>7}  {'errors':>6}  {'mean interval':>13}"
    lines = [head]
    for origin, t in shown:
        mean = t.mean_interval()
        interval = f"{mean:.2f}s" if mean is not None else "-"
        lines.append(
            f"{origin:<{width}}  {t.pages:>6}  {t.skipped:>7}  {t.errors:>6}  {interval:>13}"
        )
    if len(rows) > len(shown):
        lines.append(f"... and {len(rows) - len(shown)} more hosts")
    elapsed = _clock(time.monotonic() - fetcher.started)
    status = "interrupted" if interrupted else "done"
    total = (
        f"{status} in {elapsed}: {fetcher.fetched} fetched, {fetcher.skipped} skipped by "
        f"robots.txt, {fetcher.errors} errors"
    )
    if fetcher.invalid:
        total += f", {fetcher.invalid} invalid URLs"
    lines.append(total + f", {len(rows)} host{'' if len(rows) == 1 else 's'}")
    return "\n".join(lines)


async def _fetch_main(
    args: argparse.Namespace,
    sources: Sequence[_Source],
    store: Store,
    stream: IO[str],
    save_dir: Path | None,
) -> int:
    loop = asyncio.get_running_loop()
    crawl: asyncio.Task[None] | None = None
    stopped_by: int | None = None

    def on_signal(signum: int) -> None:
        nonlocal stopped_by
        if stopped_by is None:
            stopped_by = signum
            if crawl is not None:
                crawl.cancel()
        # A second Ctrl-C interrupts at once (KeyboardInterrupt), if cleaning up hangs.
        with contextlib.suppress(ValueError, RuntimeError):
            loop.remove_signal_handler(signum)

    handled: list[int] = []
    signum: int
    for signum in (int(signal.SIGINT), int(signal.SIGTERM)):
        # Only possible in the main thread (and not on Windows); Ctrl-C then
        # raises KeyboardInterrupt, which main() turns into exit status 130.
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
            loop.add_signal_handler(signum, on_signal, signum)
            handled.append(signum)

    policy = FetchPolicy(timeout=args.timeout, forbidden_disallows_all=args.dialect == "classic")
    gate = RobotGate(
        args.agent,
        from_=args.from_,
        delay=args.delay,
        max_per_origin=args.max_per_origin,
        max_concurrency=args.concurrency,
        store=store,
        policy=policy,
        dialect=args.dialect,
    )
    broken: list[OSError] = []

    def on_broken(exc: OSError) -> None:
        broken.append(exc)
        fetcher.stop()

    output = _Output(stream, on_broken)
    fetcher = _Fetcher(
        gate,
        output,
        sources,
        concurrency=args.concurrency,
        max_per_origin=args.max_per_origin,
        timeout=args.timeout,
        save_dir=save_dir,
    )
    progress: _Progress | None = None
    if not args.quiet and _isatty(sys.stderr):
        progress = _Progress(sys.stderr, fetcher)
        output.progress = progress
    try:
        try:
            await gate.open()
        except StoreError as exc:
            await gate.close()
            _error(f"{exc} (or pick another store with --store)")
            return EXIT_USAGE
        try:
            if progress is not None:
                progress.start()
            crawl = loop.create_task(fetcher.run())
            try:
                await crawl
            except asyncio.CancelledError:
                if stopped_by is None:
                    raise
        finally:
            if progress is not None:
                await progress.stop()
            await gate.close()
    finally:
        for handled_signum in handled:
            with contextlib.suppress(ValueError, RuntimeError):
                loop.remove_signal_handler(handled_signum)

    if broken:
        failure = broken[0]
        if isinstance(failure, BrokenPipeError):
            _silence_stdout(stream)
            return EXIT_BROKEN_PIPE
        _error(f"cannot write the output: {failure.strerror or failure}")
        return EXIT_FAILED
    if not args.quiet:
        _say_block(_summary(fetcher, interrupted=stopped_by is not None))
    if stopped_by is not None:
        _say("interrupted: every line written so far is complete")
        return EXIT_TERMINATED if stopped_by == signal.SIGTERM else EXIT_INTERRUPTED
    if fetcher.invalid or fetcher.input_error:
        return EXIT_USAGE
    return EXIT_FAILED if fetcher.errors else EXIT_OK


def _say_block(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


def _silence_stdout(stream: IO[str]) -> None:
    # The reader went away (`| head`): point stdout at /dev/null so that the
    # interpreter's final flush does not complain about the broken pipe.
    if stream is not sys.stdout:
        return
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
