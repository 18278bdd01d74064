"""``robotgate check``: why a robots.txt allows or forbids URLs, and what it says about usage."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from .. import __version__
from ..agents import product_token, robot_name
from ..decision import Decision
from ..policy import FetchPolicy
from ..policy.fetch import outcome_decision
from ..records import RobotsEntry
from ..robots import DEFAULT_MAX_BYTES, DelayLine, RobotsTxt
from ..robots.directives import FLAGS, MAX_HEAD_BYTES, PageDirectives, page_directives
from ..urls import InvalidURL, redact, robots_url, scrub, split_origin
from .args import EXIT_DISALLOWED, EXIT_OK, EXIT_USAGE, PROG, UsageError, error, say

# Column width of the verdict tags in the text output.
TAG = 14
# Another response's block after a blank line of `curl -i` output (a redirect's).
_NEXT_BLOCK = re.compile(rb"\s*HTTP/")


@dataclass
class RobotsSource:
    """Where the rules came from, and what fetching them gave (for a URL)."""

    name: str
    rules: RobotsTxt | None
    verdict: Decision | None = None  # set when the fetch outcome decides every URL
    entry: RobotsEntry | None = None
    lines: list[str] = field(default_factory=list)


def run_check(args: argparse.Namespace) -> int:
    """The ``check`` command; returns the exit status."""
    agent: str = args.agent
    page = _page_directives(args)
    if args.robots is None and page is not None and not args.urls:
        _emit_page_only(agent, page, args.json)
        return EXIT_OK
    if args.robots is None:
        raise UsageError(
            "check needs a robots.txt (a file, - or a URL) and URLs, or a page's --headers "
            f"or --html (see '{PROG} check --help')"
        )
    if not args.urls and not (args.crawl_delay or args.sitemaps or page is not None):
        raise UsageError("give at least one URL to check (or --crawl-delay / --sitemaps)")
    targets: list[str] = []
    bad = 0
    for url in args.urls:
        try:
            targets.append(_check_target(url))
        except InvalidURL as exc:
            error(scrub(str(exc), url))
            bad += 1
    source = _load_source(args, targets)
    emit = _emit_json if args.json else _emit_text
    any_disallowed = False
    if source.entry is not None and not args.json:
        entry = source.entry
        where = entry.final_url or robots_url(entry.origin)
        print(f"{'robots.txt':<{TAG}}{where}: {entry.detail or entry.outcome}")
    # Matched as the gate matches it: the robot a browser-style User-Agent names.
    robot = robot_name(agent) or agent
    extra = _extras(source, robot, args)
    if page is not None:
        extra["directives"] = page.as_json()
    for target in targets:
        if source.verdict is not None:
            decision = source.verdict
        else:
            assert source.rules is not None
            decision = source.rules.decide(target, robot)
        any_disallowed |= not decision.allowed
        # JSON lines each carry the extras; text shows them once, at the end.
        emit(source, agent, target, decision, extra if args.json else {})
    if extra and (not targets or not args.json):
        emit(source, agent, None, None, extra)
    sys.stdout.flush()
    if bad:
        return EXIT_USAGE
    return EXIT_DISALLOWED if any_disallowed else EXIT_OK


def _load_source(args: argparse.Namespace, targets: Sequence[str]) -> RobotsSource:
    robots_arg: str = args.robots
    if robots_arg.lower().startswith(("http://", "https://")) or "://" in robots_arg:
        origin = _robots_origin(robots_arg)
        for target in targets:
            if not target.startswith("/") and split_origin(target)[0] != origin:
                say(f"note: {redact(target)} is not on {origin}; "
                    "its rules are applied all the same")
        return asyncio.run(_fetch_robots_source(args, origin))
    body = _read_robots_file(robots_arg)
    site = _first_origin(targets)
    url = robots_url(site) if site else None
    rules = RobotsTxt.parse(body, dialect=args.dialect, url=url)
    name = "standard input" if robots_arg == "-" else robots_arg
    return RobotsSource(name, rules, lines=_source_lines(body))


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
        raise UsageError(scrub(str(exc), text)) from None
    path = rest.split("#", 1)[0]
    if path not in ("", "/", "/robots.txt"):
        raise UsageError(
            f"{redact(text)!r} is not a robots.txt URL: robots.txt lives at the root of a site "
            f"({origin}/robots.txt); to check another file, download it and pass the file"
        )
    return origin


def _read_robots_file(path: str) -> bytes:
    limit = DEFAULT_MAX_BYTES
    try:
        if path == "-":
            stdin = stdin_bytes()
            if sys.stdin.isatty():
                say("reading robots.txt from the terminal; end it with Ctrl-D")
            data = stdin.read(limit + 1)
        else:
            with open(path, "rb") as f:
                data = f.read(limit + 1)
    except OSError as exc:
        name = "standard input" if path == "-" else repr(path)
        raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from None
    if len(data) > limit:
        say(f"note: only the first {limit} bytes are read, as RFC 9309 2.5 allows")
        data = data[:limit]
    return data


def stdin_bytes() -> IO[bytes]:
    """Standard input as bytes (a usage error when it is closed)."""
    stream: IO[bytes] | None = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise UsageError("cannot read standard input: it is closed")
    return stream


def _source_lines(body: bytes) -> list[str]:
    """The file's lines numbered as the parser numbers them (for quoting a rule's line)."""
    text = body.decode("utf-8", "replace")
    if text[:1] == "\ufeff":
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


async def _fetch_robots_source(args: argparse.Namespace, origin: str) -> RobotsSource:
    from ..gate import RobotGate
    from ..store.memory import MemoryStore

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
    return RobotsSource(robots_url(origin), rules, verdict, entry, lines)


def _extras(source: RobotsSource, agent: str, args: argparse.Namespace) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    rules = source.rules
    if args.crawl_delay:
        delay = rules.crawl_delay(agent) if rules is not None else None
        rate = rules.request_rate(agent) if rules is not None else None
        extra["crawl_delay"] = delay
        extra["request_rate"] = (
            {"requests": rate.requests, "seconds": rate.seconds} if rate is not None else None
        )
        # The lines that gave them, and those read as asking nothing.
        for name, key in (("crawl_delay_line", "Crawl-delay"),
                          ("request_rate_line", "Request-rate")):
            line = rules.delay_line(agent, key) if rules is not None else None
            extra[name] = _delay_source(source, line) if line is not None else None
        found = rules.delay_lines(agent) if rules is not None else ()
        extra["ignored_delay_lines"] = [
            {**_delay_source(source, line), "reason": line.ignored}
            for line in found if line.ignored
        ]
    if args.sitemaps:
        extra["sitemaps"] = rules.sitemaps if rules is not None else []
    return extra


def _delay_source(source: RobotsSource, line: DelayLine) -> dict[str, Any]:
    """A Crawl-delay or Request-rate line's number and its text as the file has it."""
    n = line.line
    quoted = source.lines[n - 1].strip() if 0 < n <= len(source.lines) else ""
    return {"line": n, "text": quoted or f"{line.key}: {line.value}"}


def rule_text(decision: Decision) -> str | None:
    """The deciding rule as written in robots.txt terms, e.g. ``Disallow: /private/``."""
    rule = decision.rule
    if rule is None:
        return None
    return f"{'Allow' if rule.allow else 'Disallow'}: {rule.pattern}"


def _labels(values: Mapping[str, bool], yes: str, no: str) -> str:
    return ", ".join(f"{k}={yes if v else no}" for k, v in values.items())


def _emit_json(
    source: RobotsSource,
    agent: str,
    url: str | None,
    decision: Decision | None,
    extra: dict[str, Any],
) -> None:
    record: dict[str, Any] = {}
    if url is not None and decision is not None:
        record = {
            "url": redact(url),
            "allowed": decision.allowed,
            "rule": rule_text(decision),
            "line": decision.line,
            "group": list(decision.group) if decision.group is not None else None,
            "reason": decision.reason,
            "outcome": decision.outcome,
            "usage": dict(getattr(decision, "usage", {})),
        }
        signals = getattr(decision, "signals", None)
        if signals:
            record["signals"] = dict(signals)
        usage_reason = getattr(decision, "usage_reason", None)
        if usage_reason:
            record["usage_reason"] = usage_reason
    record["agent"] = agent
    record["robots"] = source.name
    if source.entry is not None:
        record["robots_outcome"] = source.entry.outcome
        record["robots_status"] = source.entry.status
        record["robots_detail"] = source.entry.detail
    record.update(extra)
    print(json.dumps(record))


def _emit_text(
    source: RobotsSource,
    agent: str,
    url: str | None,
    decision: Decision | None,
    extra: dict[str, Any],
) -> None:
    pad = " " * TAG
    if url is not None and decision is not None:
        tag = "ALLOWED" if decision.allowed else "DISALLOWED"
        print(f"{tag:<{TAG}}{redact(url)}")
        print(f"{pad}{decision.reason}")
        line = decision.line
        if line is not None and 0 < line <= len(source.lines):
            quoted = source.lines[line - 1].strip()
            if quoted and quoted != rule_text(decision):
                print(f"{pad}line {line}: {quoted}")
        _emit_usage(decision)
    if "crawl_delay" in extra:
        delay = extra["crawl_delay"]
        rate = extra["request_rate"]
        print(f"{'crawl-delay':<{TAG}}" + (f"{delay:g}s" if delay is not None else "none")
              + f" for {agent!r}" + _by_line(extra["crawl_delay_line"]))
        if rate is not None:
            print(f"{'request-rate':<{TAG}}{rate['requests']} per {rate['seconds']:g}s"
                  + _by_line(extra["request_rate_line"]))
        for ignored in extra["ignored_delay_lines"]:
            print(f"{'ignored':<{TAG}}line {ignored['line']}: {ignored['text']}"
                  f" ({ignored['reason']})")
    for sitemap in extra.get("sitemaps", ()):
        print(f"{'sitemap':<{TAG}}{sitemap}")
    if "sitemaps" in extra and not extra["sitemaps"]:
        print(f"{'sitemap':<{TAG}}none")
    if "directives" in extra:
        _emit_directives(extra["directives"], agent)


def _by_line(source: Mapping[str, Any] | None) -> str:
    return f", by line {source['line']}: {source['text']}" if source is not None else ""


def _emit_usage(decision: Decision) -> None:
    """``usage`` and ``signals`` lines under a URL, when its group states any."""
    usage: Mapping[str, bool] = getattr(decision, "usage", {})
    signals: Mapping[str, bool] = getattr(decision, "signals", {})
    if not (usage or signals):
        return
    if usage:
        print(f"{'usage':<{TAG}}{_labels(usage, 'y', 'n')}")
    if signals:
        print(f"{'signals':<{TAG}}{_labels(signals, 'yes', 'no')}")
    why = getattr(decision, "usage_reason", None)
    if why:
        print(f"{'':<{TAG}}{why}")


# -- what a page says: --headers / --html --------------------------------------------

# Bytes of a --headers file read: the header lines, and the body `curl -i` puts after them.
_MAX_HEADERS_FILE = 1024 * 1024 + MAX_HEAD_BYTES


def _page_directives(args: argparse.Namespace) -> PageDirectives | None:
    """The directives of the page given by ``--headers`` and ``--html``, if any."""
    headers_file: str | None = args.headers
    html_file: str | None = args.html
    if headers_file is None and html_file is None:
        return None
    if [args.robots, headers_file, html_file].count("-") > 1:
        raise UsageError("only one of ROBOTS, --headers and --html can be '-' (standard input)")
    headers: list[tuple[str, str]] = []
    body: bytes | None = None
    content_type: str | None = None
    if headers_file is not None:
        headers, body = parse_header_lines(_read_page_file(headers_file, _MAX_HEADERS_FILE))
        content_type = next((v for k, v in headers if k.lower() == "content-type"), None)
    if html_file is not None:
        body = _read_page_file(html_file, MAX_HEAD_BYTES)
        content_type = "text/html"  # given as HTML, whatever the headers say
    return page_directives(headers, body or None, agent=args.agent, content_type=content_type)


def _read_page_file(path: str, limit: int) -> bytes:
    try:
        if path == "-":
            return stdin_bytes().read(limit)
        with open(path, "rb") as f:
            return f.read(limit)
    except OSError as exc:
        name = "standard input" if path == "-" else repr(path)
        raise UsageError(f"cannot read {name}: {exc.strerror or exc}") from None


def parse_header_lines(data: bytes) -> tuple[list[tuple[str, str]], bytes]:
    """``(name, value)`` pairs of raw ``Name: value`` lines, and any body after them.

    Reads what ``curl -i`` or ``curl -D -`` prints: ``HTTP/...`` status lines
    are skipped, a line starting with a space or tab continues the one before,
    and a blank line ends the headers -- unless another ``HTTP/`` block follows
    (a redirect's), whose headers then replace them.  One pass: time linear in
    the input, whatever its lines.
    """
    headers: list[tuple[str, list[str]]] = []  # each value in its folded parts
    pos, end = 0, len(data)
    while pos < end:
        newline = data.find(b"\n", pos)
        stop = end if newline < 0 else newline
        line = data[pos:stop].rstrip(b"\r")
        pos = stop + 1
        if not line.strip():
            if not headers:
                continue
            if _NEXT_BLOCK.match(data, pos):
                headers = []
                continue
            return _joined(headers), data[pos:]
        if line.startswith(b"HTTP/"):
            headers = []
            continue
        text = _header_text(line)
        if text[:1] in (" ", "\t"):
            if headers:
                headers[-1][1].append(text.strip())
            continue
        name, colon, value = text.partition(":")
        if colon and name and name == name.strip():
            headers.append((name, [value.strip(" \t")]))
    return _joined(headers), b""


def _joined(headers: list[tuple[str, list[str]]]) -> list[tuple[str, str]]:
    return [(name, " ".join(parts)) for name, parts in headers]


def _header_text(line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line.decode("latin-1")


def _emit_page_only(agent: str, page: PageDirectives, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"agent": agent, "directives": page.as_json()}))
    else:
        _emit_directives(page.as_json(), agent)
    sys.stdout.flush()


def _emit_directives(data: Mapping[str, Any], agent: str) -> None:
    """The page's directives for ``agent``, a line each, then where each was read."""
    flags = [flag for flag in FLAGS if data.get(flag)]
    print(f"{'directives':<{TAG}}{', '.join(flags) if flags else 'none'} for {agent!r}")
    if data.get("unavailable_after"):
        print(f"{'unavailable':<{TAG}}after {data['unavailable_after']}")
    reserved = data.get("tdm_reservation")
    policy = data.get("tdm_policy")
    if reserved is not None or policy:
        tdm = {True: "rights reserved", False: "rights not reserved",
               None: "reservation not stated"}[reserved]
        print(f"{'tdm':<{TAG}}{tdm}" + (f", policy {policy}" if policy else ""))
    for source in data.get("sources", ()):
        print(f"{'source':<{TAG}}{source}")
