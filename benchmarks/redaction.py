"""The redactor's cost where every said text passes it: a log record through a robotgate
logger (its RedactingFilter) beside the same record through a logger without it, a
decision's reason made, ``redact_text`` and ``redact`` on the texts they meet, and a
robotgate error's chained cause read as a traceback reads it.

    python benchmarks/redaction.py [--loops 20000] [--repeats 5] [--before-src OLD/src]
        [--json benchmarks/results/redaction.json]

Each tree (this one's ``src``, and ``--before-src``'s) runs in a child process of its
own, the trees interleaved repeat by repeat; each figure is the best of the repeats, in
nanoseconds per call (CPU time of the child, ``time.process_time``).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: What the hot path says: a skipped URL's reason, a robots.txt outcome, a client's
#: error quoting a proxy, a URL with a token, a plain URL, a text with no URL.
TEXTS = {
    "reason, URL with user information":
        "skipped http://user:pw@127.0.0.1:8080/no/x?access_token=abc: disallowed by "
        "'Disallow: /no/' (line 2) in the group for '*'",
    "reason, URL with a slash in its password":
        "invalid URL 'http://user:pa/ss@127.0.0.1:1/x': Port could not be cast",
    "client error quoting a proxy":
        "407, message='Proxy Authentication Required', url='http://user:pw@127.0.0.1:3128'",
    "plain URL": "https://example.com/some/page.html",
    "no URL": "robots.txt answered 200: 2,311 bytes in 0.03s",
}


def _best(fn: Callable[[], object], loops: int) -> float:
    start = time.process_time()
    for _ in range(loops):
        fn()
    return (time.process_time() - start) / loops * 1e9


def child(loops: int) -> dict[str, float]:
    """One tree's figures (ns per call), run in the child."""
    from robotgate.decision import Decision
    from robotgate.errors import ProxyFailed
    from robotgate.redaction import logger, redact_text
    from robotgate.urls import redact

    figures: dict[str, float] = {}
    for name, text in TEXTS.items():
        def said(text: str = text) -> str:
            return redact_text(text)

        figures[f"redact_text: {name}"] = _best(said, loops)
    figures["redact: URL with a token"] = _best(
        lambda: redact("http://user:pw@example.com/a?token=abc&page=2"), loops)
    figures["redact: plain URL"] = _best(lambda: redact("https://example.com/a/b"), loops)
    reasons = iter(range(10**9))  # a new reason each time: Decision caches said reasons
    figures["Decision made, its reason said"] = _best(
        lambda: Decision(False, f"disallowed http://h/x?id={next(reasons)}"), loops)

    class Nowhere(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            record.getMessage()

    redacting = logger("robotgate.pacing")
    plain = logging.getLogger("benchmark.redaction.plain")  # no RedactingFilter
    for log in (redacting, plain):
        log.handlers[:] = [Nowhere()]
        log.propagate = False
        log.setLevel(logging.DEBUG)
    url = "http://user:pw@127.0.0.1:8080/no/x?access_token=abc"
    figures["log record, redacting logger"] = _best(
        lambda: redacting.debug("skipped %s: %s", url, "disallowed"), loops)
    figures["log record, plain logger (the pair)"] = _best(
        lambda: plain.debug("skipped %s: %s", url, "disallowed"), loops)

    def chained() -> object:
        try:
            try:
                raise ConnectionRefusedError(111, "refused by http://user:pw@127.0.0.1:9")
            except OSError as exc:
                raise ProxyFailed("http://user:pw@127.0.0.1:9", "http://h/", "no") from exc
        except ProxyFailed as failed:
            return failed.__cause__

    figures["error raised from a cause, cause read"] = _best(chained, max(1, loops // 10))
    return figures


def run_tree(src: Path, loops: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run([sys.executable, __file__, "--child", str(loops)], env=env,
                         capture_output=True, text=True, check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loops", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--before-src", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    trees = {"this": ROOT / "src"}
    if args.before_src is not None:
        trees["before"] = args.before_src
    best: dict[str, dict[str, float]] = {name: {} for name in trees}
    for _ in range(args.repeats):  # interleaved: the trees share the machine's moods
        for name, src in trees.items():
            for key, value in run_tree(src, args.loops).items():
                best[name][key] = min(value, best[name].get(key, value))
    keys = list(best["this"])
    header = f"{'ns per call (best of ' + str(args.repeats) + ')':<52}" + "".join(
        f"{name:>12}" for name in trees)
    print(header)
    for key in keys:
        print(f"{key:<52}" + "".join(f"{best[name].get(key, float('nan')):>12,.0f}"
                                     for name in trees))
    print("command: python benchmarks/redaction.py " + " ".join(sys.argv[1:]))
    report: dict[str, Any] = {"loops": args.loops, "repeats": args.repeats, "figures": best,
                              "python": sys.version.split()[0]}
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
        print(f"JSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
