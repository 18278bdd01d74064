"""``robotgate report`` of a large crawl log: time, peak memory, size of the page.

    python benchmarks/report.py [--lines 1000000] [--hosts 20000] [--even] [--before REV]
        [--browser] [--keep DIR] [--json FILE]

First it writes a crawl log of ``lines`` JSON lines the way ``robotgate fetch``
does (the CLI's own writers: ``record_json`` for each URL's result, the robots.txt
requests through ``RobotsLog``, each line through ``Output``): ``hosts`` servers
of Zipf-like sizes (the busiest holds a few percent of the URLs; ``--even``: all
alike, each in turn), each paced at its
interval (1 s, some a 5 s Crawl-delay), with pages (200), URLs refused by a few
robots.txt rules and by unreachable robots.txt files, failed answers (404, 500,
429 and 503 with back-offs), errors (timeouts, refused connections), invalid URLs
and URLs with a password.  The counts of each are known.

Then ``python -m robotgate report LOG -o PAGE`` runs in a child process for each
tree measured: this checkout's ``src/`` ("after") and, with ``--before REV``, the
``src/`` of that commit unpacked with ``git archive`` into a temporary folder
("before"), one after the other in the same run.  Each child's wall time, CPU time
and peak RSS (``ru_utime + ru_stime``, ``ru_maxrss`` from ``wait4``) and the size of
the page it wrote are the figures;
the page's summary is read back and compared with the counts written (goal: equal),
and no password written into the log may be in the page.  With ``--browser``,
headless Chromium's time to load each page and hand back its DOM too.  Goals for
1,000,000 lines: peak RSS <= 300 MB, page <= 25 MB.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import ROOT
from benchmarks.harness.report import command_line, machine, write_json
from testbed.children import child_env

SECRET = "hunter2-secret"  # a password some URLs of the log carry
RSS_GOAL_MB = 300.0
SIZE_GOAL_MB = 25.0
_GOAL_LINES = 1_000_000  # the goals are for a log this long


class LogWriter:
    """A crawl's JSON lines, made with the CLI's own record writers."""

    def __init__(self, hosts: int, even: bool = False, seed: int = 1) -> None:
        from robotgate import RobotsTxt
        from robotgate.policy.fetch import outcome_decision
        from robotgate.records import Outcome, RobotsEntry

        self.rng = random.Random(seed)
        self.hosts = hosts
        # Zipf-like sizes: host i gets a weight 1 / (i + 10).
        self.weights = [1.0 / (i + 10) for i in range(hosts)]
        self.even = even  # each host in turn instead
        self.clock = [1_764_000_000.0 + self.rng.random() * 60 for _ in range(hosts)]
        self.interval = [5.0 if i % 17 == 3 else 1.0 for i in range(hosts)]
        self.backing_off = [0.0] * hosts
        self.robots_rules = [
            RobotsTxt.parse("User-agent: *\nDisallow: /private/\nDisallow: /search\n"),
            RobotsTxt.parse("# shop\nUser-agent: *\nDisallow: /cart\nAllow: /cart/help\n"
                            "Disallow: /*?session=\n"),
        ]
        self.unreachable = outcome_decision(RobotsEntry(
            origin="http://x", outcome=Outcome.UNREACHABLE, fetched_at=0.0, fresh_until=0.0,
            status=503, detail="robots.txt answered 503"))
        self.counts: Counter[str] = Counter()
        self.robots_seen: set[int] = set()

    def write(self, path: Path, lines: int) -> dict[str, int]:
        """Write ``lines`` lines to ``path``; what they hold, counted."""
        from robotgate.cli.report import Output, record_json
        from robotgate.cli.robots_log import RobotsLog
        from robotgate.crawl.results import CrawlResult

        log = RobotsLog(lambda url: "host:" + url.split("/")[2].rpartition("@")[2])
        choose = self.rng.choices
        hosts = range(self.hosts)
        with path.open("w", encoding="utf-8") as stream:
            output = Output(stream)
            batch: list[int] = []
            for n in range(lines):
                if self.even:
                    host = n % self.hosts
                else:
                    if not batch:
                        batch = choose(hosts, self.weights, k=4096)
                    host = batch.pop()
                result = self._result(CrawlResult, host, n, log)
                record = record_json(result)
                if result.key is not None:
                    robots = log.take(result.key)
                    if robots:
                        record["robots_txt"] = robots
                output.write(record)
        self.counts["lines"] = lines
        self.counts["hosts"] = len({k for k in self.counts if k.startswith("host:")})
        return {k: v for k, v in self.counts.items() if not k.startswith("host:")}

    def _result(self, make: Any, host: int, n: int, log: Any) -> Any:
        rng = self.rng
        name = f"h{host}.example"
        roll = rng.random()
        if roll < 0.001:
            self.counts["invalid"] += 1
            return make(f"ftp://{name}/{n}", error=f"invalid URL 'ftp://{name}/{n}': scheme "
                        "must be http or https")
        userinfo = f"crawler:{SECRET}@" if n % 997 == 0 else ""
        key = f"host:{name}"
        self.counts[key] = 1
        if host % 50 == 7:  # robots.txt unreachable: no URL of the site asked
            self.counts["unreachable"] += 1
            return make(f"http://{userinfo}{name}/page/{n}", key=key,
                        decision=self.unreachable)
        rules = self.robots_rules[host % 2]
        path = (("/private/", "/search?q=", "/cart", "/item?session=")[n % 4] + str(n)
                if roll < 0.08 else f"/page/{n}")
        url = f"http://{userinfo}{name}{path}"
        decision = rules.decide(path, "BenchBot")
        if not decision.allowed:
            self.counts["refused"] += 1
            return make(url, key=key, decision=decision)
        started = self.clock[host]
        if host not in self.robots_seen:
            self.robots_seen.add(host)
            # The gate keeps the interval after a robots.txt request too.
            asked = started - self.interval[host] - 0.3
            log.note(f"http://{name}/robots.txt", asked, asked + 0.1, 200, None)
            self.counts["robots"] += 1
        waited, reason = rng.random() * self.interval[host], "delay"
        if self.backing_off[host]:
            waited, reason = self.backing_off[host], "back-off"
            started += waited
            self.backing_off[host] = 0.0
        if self.interval[host] > 1:
            reason = "crawl-delay"
        self.clock[host] = started + self.interval[host] + rng.random() * 0.2
        answered = started + 0.05 + rng.random() * 0.2
        story = {"started": started, "answered": answered, "waited": waited,
                 "wait_reason": reason, "interval": self.interval[host]}
        kind = rng.random()
        if kind < 0.02:  # no answer
            error = ("timed out: page not done within 30s" if kind < 0.01 else
                     f"ClientConnectorError: Cannot connect to host {name}:80")
            self.counts["errors"] += 1
            del story["answered"]
            return make(url, key=key, error=error, elapsed=answered - started + waited,
                        **story)
        status = 200
        if kind < 0.05:
            status = 404
        elif kind < 0.06:
            status = 500
        elif kind < 0.07:
            status = (429, 503)[n % 2]
            self.backing_off[host] = 2.0 * self.interval[host]
            self.counts["throttled"] += 1
        self.counts["pages" if status < 400 else "failed"] += 1
        return make(url, key=key, status=status, final_url=url, bytes=2048 + n % 5000,
                    info={"content_type": "text/html; charset=utf-8"},
                    elapsed=answered - started + waited, **story)


def unpack_src(rev: str, into: Path) -> Path:
    """The ``src/`` of commit ``rev``, unpacked under ``into`` (``git archive``)."""
    archive = subprocess.run(["git", "archive", rev, "src"], cwd=ROOT, check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def run_report(log: Path, page: Path, src: Path) -> dict[str, Any]:
    """``python -m robotgate report LOG -o PAGE`` with ``src``'s robotgate in a child:
    its wall time, peak RSS and the page's size."""
    began = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "robotgate", "report", "-q", str(log),
                             "-o", str(page)], env=child_env(src), stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - began
    figures: dict[str, Any] = {"seconds": round(seconds, 2), "exit": proc.returncode,
                               "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
                               "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}
    if proc.returncode not in (0, 1):
        figures["error"] = err.decode(errors="replace")[-500:]
        return figures
    figures["html_mb"] = round(page.stat().st_size / 1e6, 2)
    return figures


def browser_seconds(page: Path, profile: Path, timeout: float = 300.0) -> float | None:
    """Seconds headless Chromium takes to load ``page`` and hand back its DOM (None:
    not within ``timeout``)."""
    chromium = shutil.which("chromium")
    if chromium is None:
        return None
    began = time.monotonic()
    try:
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=timeout, check=True)
    except (subprocess.TimeoutExpired, subprocess.CalledProcessError):
        return None
    return round(time.monotonic() - began, 1)


def summary_counts(page: Path) -> dict[str, int]:
    """The totals the page's summary says, read back (the rows of the current page)."""
    text = page.read_text(encoding="utf-8", errors="replace")
    found = {}
    for name, row in (("pages", "fetched"), ("refused", "refused by robots.txt"),
                      ("unreachable", "robots.txt unreachable"),
                      ("failed", "failed"), ("errors", "errors"),
                      ("robots", "robots.txt requests"), ("hosts", "hosts"),
                      ("lines", "lines")):
        match = re.search(rf"<tr><th>{re.escape(row)}</th><td>([\d,]+)", text)
        if match:
            found[name] = int(match.group(1).replace(",", ""))
    invalid = re.search(r"([\d,]+) invalid URLs?", text)
    found["invalid"] = int(invalid.group(1).replace(",", "")) if invalid else 0
    found["secret_shown"] = int(SECRET in text)
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--hosts", type=int, default=20_000)
    ap.add_argument("--even", action="store_true",
                    help="every host as large (each in turn), not Zipf-like sizes")
    ap.add_argument("--before", metavar="REV",
                    help="also run the report of this commit (e.g. the one before a change)")
    ap.add_argument("--keep", type=Path, help="write the log and the pages here (kept)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--browser", action="store_true",
                    help="also time headless Chromium loading each page (at most 300 s)")
    ap.add_argument("--no-progress", action="store_true", help="say nothing while running")
    args = ap.parse_args(argv)

    def say(text: str) -> None:
        if not args.no_progress:
            print(text, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / "crawl.jsonl"
        say(f"writing {args.lines:,} lines over {args.hosts:,} hosts to {log} ...")
        began = time.monotonic()
        written = LogWriter(args.hosts, args.even).write(log, args.lines)
        log_seconds = time.monotonic() - began
        trees = {"after": ROOT / "src"}
        if args.before:
            trees = {"before": unpack_src(args.before, Path(tmp) / "before"), **trees}
        runs: dict[str, Any] = {}
        for name, src in trees.items():
            say(f"robotgate report, {name} ...")
            page = folder / f"report-{name}.html"
            runs[name] = run_report(log, page, src)
            if name == "after" and "error" not in runs[name]:
                runs[name]["summary"] = summary_counts(page)
            if args.browser and "error" not in runs[name]:
                say(f"Chromium loads the page, {name} ...")
                runs[name]["browser_seconds"] = browser_seconds(page, Path(tmp) / "profile")
        log_mb = log.stat().st_size / 1e6
    after = runs["after"]
    summary = after.get("summary", {})
    exact = {k: (summary.get(k), written.get(k, 0)) for k in
             ("lines", "hosts", "pages", "refused", "unreachable", "failed", "errors", "invalid",
              "robots")}
    report = {"sizes": {"lines": args.lines, "hosts": args.hosts, "log_mb": round(log_mb, 1),
                        "log_seconds": round(log_seconds, 1)},
              "written": written, "runs": runs, "machine": machine(),
              "totals_exact": all(a == b for a, b in exact.values()),
              "secret_shown": bool(summary.get("secret_shown", 1)),
              "command": command_line(argv)}
    at_scale = args.lines >= _GOAL_LINES
    print(f"a crawl log of {args.lines:,} lines over {args.hosts:,} hosts "
          f"({log_mb:.1f} MB, written in {log_seconds:.1f} s)")
    print(f"{'':8}{'seconds':>10}{'CPU seconds':>14}{'peak RSS MB':>14}{'HTML MB':>10}")
    for name, figures in runs.items():
        if "error" in figures:
            print(f"{name:8}failed: {figures['error']}")
            continue
        browser = ""
        if "browser_seconds" in figures:
            loaded = figures["browser_seconds"]
            browser = (f"   Chromium loads it in {loaded:.1f} s" if loaded is not None
                       else "   Chromium: not loaded within 300 s")
        print(f"{name:8}{figures['seconds']:>10.1f}{figures['cpu_seconds']:>14.1f}"
              f"{figures['peak_rss_mb']:>14.1f}{figures['html_mb']:>10.2f}{browser}")
    if at_scale:
        print(f"goals: peak RSS <= {RSS_GOAL_MB:g} MB, HTML <= {SIZE_GOAL_MB:g} MB")
    for key, (said, counted) in exact.items():
        mark = "" if said == counted else "   <- differs"
        print(f"  {key:8} page says {said}, log holds {counted}{mark}")
    print(f"totals exact: {report['totals_exact']}; a URL's password in the page: "
          f"{report['secret_shown']}")
    passed = (report["totals_exact"] and not report["secret_shown"] and "error" not in after
              and (not at_scale or (after["peak_rss_mb"] <= RSS_GOAL_MB
                                    and after["html_mb"] <= SIZE_GOAL_MB)))
    report["pass"] = passed
    if args.json:
        write_json(args.json, report)
    print(f"\n{report['command']}\n(JSON: {args.json})")
    return 0 if passed else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
