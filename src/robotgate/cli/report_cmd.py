"""``robotgate report CRAWL.jsonl [-o REPORT.html]``: the HTML report of a crawl."""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from .args import EXIT_FAILED, EXIT_OK, UsageError, say
from .html_report import BadLine, read_lines, read_story, render_parts


def run_report(args: argparse.Namespace) -> int:
    """The ``report`` command: 0 when no host was asked sooner than its interval
    allowed, 1 when some gap was shorter (the report shows where), 2 when the
    lines cannot be read (a line that cannot be told is named, in one line)."""
    if args.crawl is None:
        raise UsageError("report needs the JSON lines of a crawl: robotgate report "
                         "crawl.jsonl -o report.html")
    try:
        if args.crawl == "-":
            story = read_story(read_lines(sys.stdin.buffer))
        else:
            with _open_input(args.crawl) as stream:
                story = read_story(read_lines(stream))
    except BadLine as exc:
        raise UsageError(f"{_name(args.crawl)}, {exc}") from None
    if not story.hosts:
        raise UsageError(f"no crawl line in {_name(args.crawl)} (the JSON lines "
                         "'robotgate fetch' writes)")
    title = args.title or f"robotgate crawl report: {_name(args.crawl)}"
    page = render_parts(story, title)
    out = args.out or _default_out(args.crawl)
    if out == "-":
        sys.stdout.writelines(page)
        sys.stdout.flush()
    else:
        _write(Path(out), page)
    hosts = len(story.hosts)
    short = story.short_gaps
    verdict = (f"{short} gap{'s' if short != 1 else ''} shorter than the interval owed"
               if short else "no host asked sooner than its interval allowed")
    if out != "-" and not args.quiet:
        say(f"wrote {out}: {hosts} host{'s' if hosts != 1 else ''}, {verdict}")
    return EXIT_FAILED if short else EXIT_OK


def _name(crawl: str) -> str:
    return "standard input" if crawl == "-" else repr(crawl)


def _open_input(crawl: str) -> IO[bytes]:
    try:
        return open(crawl, "rb")
    except OSError as exc:
        raise UsageError(f"cannot read {crawl!r}: {exc.strerror or exc}") from None


def _default_out(crawl: str) -> str:
    if crawl == "-":
        return "-"
    path = Path(crawl)
    if path.suffix == ".html":  # never over the input
        return str(path.with_name(path.name + ".report.html"))
    return str(path.with_suffix(".html"))


def _write(path: Path, page: Iterable[str]) -> None:
    """``page``, piece by piece, to ``path`` through a temporary file of its own,
    created with ``O_EXCL`` under a random name (a link planted there is never
    written through), renamed into place when complete."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    created = False
    try:
        fd = os.open(temporary, flags, 0o666)  # the user's umask decides, as for any file
        created = True
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.writelines(page)
        os.replace(temporary, path)
    except OSError as exc:
        if created:
            with contextlib.suppress(OSError):
                temporary.unlink()
        raise UsageError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
