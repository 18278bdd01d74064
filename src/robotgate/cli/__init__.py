"""The ``robotgate`` command: ``check`` a robots.txt, ``fetch`` URLs politely, ``demo``.

``robotgate check ROBOTS URL... [--agent NAME]`` says for each URL whether the
agent may fetch it and why (the rule, its line, the group), and what the site
says about using it; ROBOTS is a file, ``-`` for standard input, or a site's
robots.txt URL (fetched with the gate's policy).  Exit status: 0 all allowed,
1 any disallowed, 2 bad input.

``robotgate fetch --agent NAME (URL... | -i FILE | -)`` crawls URLs through
``gate.crawl`` (robots.txt, pacing, back-off, workers busy across hosts) and
writes one JSON line per URL.  Exit status: 0 done, 1 some URL got no answer, or
nothing was fetched while some URL could not be (robots.txt unreachable, an answer
of 400 or above), 2 bad input (an invalid URL still gets its line and the run goes
on), 130 interrupted (Ctrl-C).

``robotgate demo`` plays dozens of hosts on loopback and crawls them, to show
the gate at work without a network.

``robotgate crawls [--store STORE] [NAME] [--drop]`` lists the named crawls of
``fetch --crawl NAME`` with their counts, or drops one.

``robotgate report CRAWL.jsonl -o REPORT.html`` draws a crawl's JSON lines as
one self-contained HTML page: a summary and a timeline per host.

User mistakes (bad options, unreadable files) are reported in one line on
stderr, never with a traceback.  The package: :mod:`.args` (parser, types,
messages), :mod:`.check`, :mod:`.fetch`, :mod:`.inputs` (URL sources),
:mod:`.bodies` (capped reads, saving), :mod:`.report` (JSON lines, progress,
summary), :mod:`.robots_log` (robots.txt requests for the lines), :mod:`.html_report`
and :mod:`.report_cmd` (the HTML report), :mod:`.demo` and :mod:`.demo_server`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .args import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    UsageError,
    build_parser,
    default_store_path,
    error,
    say,
)

__all__ = ["build_parser", "default_store_path", "main"]


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
            command = f"{PROG} {args.command}" if args.command else PROG
            raise UsageError(
                f"unrecognized arguments: {' '.join(unknown)} (see '{command} --help')"
            )
        if args.command == "check":
            from .check import run_check

            return run_check(args)
        if args.command == "fetch":
            from .fetch import run_fetch

            return run_fetch(args)
        if args.command == "demo":
            from .demo import run_demo

            return run_demo(args)
        if args.command == "report":
            from .report_cmd import run_report

            return run_report(args)
        if args.command == "crawls":
            from .crawls_cmd import run_crawls

            return run_crawls(args)
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    except UsageError as exc:
        error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        say("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `robotgate check ... | head -1`: the reader left
        from .fetch import silence_stdout

        silence_stdout(sys.stdout)
        return EXIT_BROKEN_PIPE
