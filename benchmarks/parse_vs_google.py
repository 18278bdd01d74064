"""Instructions a robots.txt parse takes: robotgate against Google's C++ robotstxt, same files.

    python benchmarks/parse_vs_google.py --google-src DIR [--every 8] [--before-src OLD/src]
        [--after-src NEW/src] [--json benchmarks/results/parse_vs_google.json]

``DIR`` is a checkout of https://github.com/google/robotstxt (or ``$GOOGLE_ROBOTSTXT_SRC``).
A small driver of this script's own is built with ``g++ -O2`` against that checkout's
``robots.cc`` and Debian's abseil (``libabsl-dev``, found by ``pkg-config``); without a
compiler, abseil, valgrind or the source, the script says what is missing and exits 0.

Every ``--every``-th file of the corpus is read into memory, then parsed once, in a child
under callgrind; the same child reading the same files without parsing them is subtracted, so
start-up and reading are counted by neither side.  Google's parse is counted three ways:
``ParseRobotsTxt`` with a handler that does nothing (the tokenizer alone), with a handler that
keeps each group's agents and rules as strings (what robotgate's parse keeps: the comparison),
and ``RobotsMatcher::OneAgentAllowedByRobots`` (a parse that answers one URL as it goes).
robotgate's is ``RobotsTxt.parse(body)`` from bytes, each result dropped as Google's is: this
checkout's ``src`` (or ``--after-src``, e.g. a tree built in place with mypyc), ``--before-src``
beside it, and the installed robotgate when its parser is compiled; each is shown as compiled
or pure as its child found it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import CORPUS, RESULTS, ROOT
from benchmarks.harness.report import command_line, machine, write_json
from benchmarks.harness.stats import parse_callgrind, valgrind
from testbed.children import child_env

ENV_SRC = "GOOGLE_ROBOTSTXT_SRC"
#: Google's figure the ratios are taken against.
COMPARED = "google keep"
GOAL = 3.0

#: Our driver (not Google's code): reads the listed files, then parses each once in MODE.
DRIVER = r"""
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "robots.h"

namespace {

class Ignore : public googlebot::RobotsParseHandler {
 public:
  int lines = 0;
  void HandleRobotsStart() override {}
  void HandleRobotsEnd() override {}
  void HandleUserAgent(int, absl::string_view) override { ++lines; }
  void HandleAllow(int, absl::string_view) override { ++lines; }
  void HandleDisallow(int, absl::string_view) override { ++lines; }
  void HandleSitemap(int, absl::string_view) override { ++lines; }
  void HandleUnknownAction(int, absl::string_view, absl::string_view) override { ++lines; }
};

struct Group {
  std::vector<std::string> agents;
  std::vector<std::pair<bool, std::string>> rules;
};

// Keeps what a parse must keep to answer later: each group's agents and rules, the sitemaps.
class Keep : public googlebot::RobotsParseHandler {
 public:
  std::vector<Group> groups;
  std::vector<std::string> sitemaps;
  bool in_agents = false;
  void HandleRobotsStart() override {}
  void HandleRobotsEnd() override {}
  void HandleUserAgent(int, absl::string_view value) override {
    if (!in_agents) groups.emplace_back();
    in_agents = true;
    groups.back().agents.emplace_back(value);
  }
  void HandleAllow(int, absl::string_view value) override { Rule(true, value); }
  void HandleDisallow(int, absl::string_view value) override { Rule(false, value); }
  void HandleSitemap(int, absl::string_view value) override { sitemaps.emplace_back(value); }
  void HandleUnknownAction(int, absl::string_view, absl::string_view) override {}

 private:
  void Rule(bool allow, absl::string_view value) {
    in_agents = false;
    if (!groups.empty()) groups.back().rules.emplace_back(allow, std::string(value));
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const std::string mode = argv[1];
  std::vector<std::string> bodies;
  std::ifstream list(argv[2]);
  for (std::string path; std::getline(list, path);) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    bodies.push_back(s.str());
  }
  long kept = 0;
  for (const std::string& body : bodies) {
    if (mode == "ignore") {
      Ignore handler;
      googlebot::ParseRobotsTxt(body, &handler);
      kept += handler.lines;
    } else if (mode == "keep") {
      Keep handler;
      googlebot::ParseRobotsTxt(body, &handler);
      for (const Group& g : handler.groups) kept += g.agents.size() + g.rules.size();
    } else if (mode == "match") {
      googlebot::RobotsMatcher matcher;
      kept += matcher.OneAgentAllowedByRobots(body, "Googlebot", "https://example.com/");
    }
  }
  std::printf("{\"files\": %zu, \"kept\": %ld}\n", bodies.size(), kept);
  return 0;
}
"""

#: Google's side: the mode the driver runs, by the name it is shown under.
GOOGLE_MODES = {"google ignore": "ignore", COMPARED: "keep", "google match": "match"}


def pick(corpus: Path, every: int) -> list[Path]:
    """Every ``every``-th file of the corpus, by name."""
    return sorted(corpus.iterdir())[::every]


def missing(google_src: Path | None) -> list[str]:
    """What this benchmark needs and this machine lacks, one line each."""
    lacks = []
    if google_src is None:
        lacks.append(f"Google's robotstxt source: pass --google-src DIR or set ${ENV_SRC}")
    elif not (google_src / "robots.cc").is_file() or not (google_src / "robots.h").is_file():
        lacks.append(f"Google's robotstxt source: no robots.cc and robots.h in {google_src}")
    if shutil.which("g++") is None:
        lacks.append("a C++ compiler: g++ not found")
    if shutil.which("pkg-config") is None:
        lacks.append("pkg-config (to find abseil): not found")
    elif subprocess.run(["pkg-config", "--exists", "absl_strings"]).returncode != 0:
        lacks.append("abseil: pkg-config knows no absl_strings "
                     "(Debian: apt-get install libabsl-dev)")
    if shutil.which("valgrind") is None:
        lacks.append("valgrind (callgrind counts the instructions): not found")
    return lacks


def build(google_src: Path, out_dir: Path) -> Path:
    """The driver, built with g++ -O2 against ``google_src`` and abseil."""
    driver = out_dir / "driver.cc"
    driver.write_text(DRIVER)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "absl_strings"], check=True,
                           capture_output=True, text=True).stdout.split()
    binary = out_dir / "parse_driver"
    subprocess.run(["g++", "-O2", "-std=c++17", f"-I{google_src}", str(driver),
                    str(google_src / "robots.cc"), *flags, "-o", str(binary)], check=True)
    return binary


#: robotgate's child, run as ``python -c PY_CHILD MODE LIST``: reads the listed files, then, in
#: mode ``parse``, parses each once (``read``: not).  Only robotgate is imported (not the
#: harness, which imports aiohttp): start-up under callgrind is most of a child's time.
PY_CHILD = """
import json, sys
from pathlib import Path
from robotgate import RobotsTxt
from robotgate.compiled import compiled_modules
bodies = [Path(p).read_bytes() for p in Path(sys.argv[2]).read_text().splitlines()]
kept = 0
if sys.argv[1] == "parse":
    for body in bodies:
        kept += RobotsTxt.parse(body) is not None
print(json.dumps({"files": len(bodies), "kept": kept,
                  "compiled": "robotgate.robots.rfc9309" in compiled_modules()}))
"""


def count(command: list[str], cg_file: Path, env: dict[str, str] | None = None
          ) -> tuple[int, dict[str, Any]]:
    """Instructions of ``command`` under callgrind, and the JSON it printed last."""
    done = subprocess.run([*valgrind(cg_file), *command], capture_output=True, text=True,
                          env=env)
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise SystemExit(f"{command[0]} exited {done.returncode}: {tail}")
    printed: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return int(parse_callgrind(cg_file)["instructions"]), printed


def installed_is_compiled() -> bool:
    """Whether the robotgate installed here (not this checkout's src) parses as compiled code."""
    code = ("from robotgate.compiled import compiled_modules; "
            "print('robotgate.robots.rfc9309' in compiled_modules())")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=tempfile.gettempdir())
    return out.stdout.strip() == "True"


def ours(list_file: Path, src: Path | None, cg_file: Path) -> tuple[int, bool]:
    """robotgate's instructions for the listed files' parse (``src``: that tree; None: the
    installed robotgate), and whether its parser ran compiled."""
    totals = {}
    compiled = False
    for mode in ("read", "parse"):
        totals[mode], printed = count([sys.executable, "-c", PY_CHILD, mode, str(list_file)],
                                      cg_file, child_env(src))
        compiled = bool(printed["compiled"])
    return totals["parse"] - totals["read"], compiled


def measure(google_src: Path, corpus: Path, every: int, before: Path | None,
            after: Path) -> dict[str, Any]:
    files = pick(corpus, every)
    report: dict[str, Any] = {"files": len(files), "every": every, "corpus": str(corpus),
                              "instructions": {}, "per_file": {}}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        list_file = out / "files.txt"
        list_file.write_text("".join(f"{p}\n" for p in files))
        cg_file = out / "callgrind.out"
        binary = build(google_src, out)
        reading = count([str(binary), "read", str(list_file)], cg_file)[0]
        for name, mode in GOOGLE_MODES.items():
            report["instructions"][name] = count([str(binary), mode, str(list_file)],
                                                 cg_file)[0] - reading
            print(f"{name}: done", file=sys.stderr)
        trees: dict[str, Path | None] = {"robotgate": after}
        if before is not None:
            trees["before"] = before
        if installed_is_compiled():
            trees["robotgate installed"] = None
        else:
            report["no_compiled"] = "the installed robotgate's parser is not compiled"
        for tree, src in trees.items():
            instructions, compiled = ours(list_file, src, cg_file)
            name = f"{tree} ({'compiled' if compiled else 'pure'})"
            report["instructions"][name] = instructions
            print(f"{name}: done", file=sys.stderr)
    for name, total in report["instructions"].items():
        report["per_file"][name] = total / len(files)
    return report


def render(report: dict[str, Any]) -> str:
    base = report["per_file"][COMPARED]
    lines = [f"{report['files']} files (every {report['every']}th of {report['corpus']}), "
             f"instructions a file, callgrind; ratio against {COMPARED!r} (goal <= {GOAL:g}x)",
             f"{'parser':<34}{'instr/file':>14}{'ratio':>9}"]
    for name, per_file in report["per_file"].items():
        lines.append(f"{name:<34}{per_file:>14,.0f}{per_file / base:>8.2f}x")
    if "no_compiled" in report:
        lines.append(f"(no compiled column: {report['no_compiled']})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--google-src", type=Path, default=os.environ.get(ENV_SRC) or None,
                    help=f"a checkout of google/robotstxt (default: ${ENV_SRC})")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--every", type=int, default=8, help="parse every Nth file of the corpus")
    ap.add_argument("--before-src", type=Path, help="also run that tree's robotgate")
    ap.add_argument("--after-src", type=Path, default=ROOT / "src",
                    help="the robotgate measured as this one (default: this checkout's src)")
    ap.add_argument("--json", type=Path, default=RESULTS / "parse_vs_google.json")
    args = ap.parse_args(argv)
    lacks = missing(args.google_src)
    if lacks:
        print("parse_vs_google: not measured; this machine lacks:")
        for line in lacks:
            print(f"  - {line}")
        return 0
    if not args.corpus.is_dir():
        print(f"corpus not found: {args.corpus}", file=sys.stderr)
        return 2
    os.environ["PYTHONHASHSEED"] = "0"  # the children hash alike: counts that repeat
    report = measure(args.google_src.resolve(), args.corpus, args.every, args.before_src,
                     args.after_src)
    report["machine"] = machine()
    print(render(report))
    write_json(args.json, report)
    print(f"\n{command_line(argv)}\n(JSON: {args.json})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
