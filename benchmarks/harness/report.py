"""A benchmark's report: its figures as a table, its details, its command line and its JSON."""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.harness import ROOT
from robotgate.compiled import compiled_modules

#: One line of the table: ``{"section": title}``, or a figure with its value per column, its
#: goal and whether it passed (None: no goal).
Row = dict[str, Any]
IMPLS = ("robotgate", "baseline", "scrapy", "crawlee")


def fmt_int(n: float) -> str:
    return f"{n:,.0f}"


def md(head: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table."""
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return lines


def render_table(rows: Sequence[Row], columns: Sequence[str] = IMPLS,
                 notes: dict[str, list[str]] | None = None) -> str:
    """The figures, one line each: a value per column, the goal, PASS or FAIL."""
    widths = [44, *(16 for _ in columns), 18, 5]
    head = ["figure", *columns, "goal", "pass"]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()]
    lines.append("-" * len(lines[0]))
    for row in rows:
        if "section" in row:
            lines.append(f"[{row['section']}]")
            continue
        values = row.get("values", {})
        cells = [row["figure"], *(values.get(c, "-") for c in columns), row["goal"],
                 {True: "PASS", False: "FAIL", None: ""}[row["pass"]]]
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True))
                     .rstrip())
    if notes:
        lines.append("")
        for impl, texts in notes.items():
            lines.append(f"{impl}: {'; '.join(texts)}")
    return "\n".join(lines)


def command_line(argv: Sequence[str] | None = None) -> str:
    """How to run this benchmark again with the same options, from the checkout."""
    script = Path(sys.argv[0]).resolve()
    with_root = script.is_relative_to(ROOT)
    name = str(script.relative_to(ROOT)) if with_root else str(script)
    args = sys.argv[1:] if argv is None else argv
    return shlex.join(["python", name, *args])


def machine() -> dict[str, Any]:
    """Where the figures were made: Python, cores, load, the compiled modules, the commit."""

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                                  timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {"python": platform.python_version(), "cpus": os.cpu_count(),
            "aiohttp": aiohttp.__version__, "load_average": os.getloadavg(),
            # The children run this install; a --before-src tree runs whatever it holds.
            "compiled": compiled_modules(),
            "commit": git("rev-parse", "--short", "HEAD"),
            "src_changed": bool(git("status", "--porcelain", "--", "src"))}


def compiled_line(report: dict[str, Any]) -> str:
    compiled = report.get("machine", {}).get("compiled")
    if compiled is None:
        return ""
    return "\nrobotgate's hot path ran " + (
        f"compiled with mypyc ({', '.join(compiled)})" if compiled else "as pure Python")


def write_json(path: Path, data: Any) -> None:
    """``data`` as indented JSON at ``path``, its folder made if need be."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")


def finish(report: dict[str, Any], rows: Sequence[Row], details: str, json_path: Path | None,
           argv: Sequence[str] | None, columns: Sequence[str] = IMPLS,
           notes: dict[str, list[str]] | None = None) -> int:
    """Print the table, the details and the command line, write the JSON; the exit status
    (1 when a figure with a goal failed)."""
    report["command"] = command_line(argv)
    report["table"] = list(rows)
    if json_path is not None:
        write_json(json_path, report)
    print(render_table(rows, columns, notes))
    print(compiled_line(report))
    if details:
        print(details)
    seconds = report.get("seconds")
    took = f"{seconds:.0f} s; " if seconds is not None else ""
    print(f"\n{report['command']}\n({took}JSON: {json_path})")
    return 1 if any(r.get("pass") is False for r in rows) else 0
