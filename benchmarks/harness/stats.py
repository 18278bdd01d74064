"""Statistics of runs: medians, and callgrind's counts."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: C functions counted in callgrind runs: GC-tracked allocations, small-object
#: allocations, the collector itself (its inclusive instructions), and the connections
#: opened (libc's ``connect``).
CG_FUNCTIONS = ("_PyObject_GC_Link", "_PyObject_Malloc", "gc_collect_main", "connect")



#: ``--cache-sim``'s figures and callgrind's events they add up.
SIM_EVENTS = {"i1_misses": ("I1mr",), "d1_misses": ("D1mr", "D1mw"),
              "mispredicts": ("Bcm", "Bim")}



def median(values: Sequence[float]) -> float:
    """The median, NaN for no values."""
    return statistics.median(values) if values else math.nan


def valgrind(out_file: Path, cache_sim: bool = False) -> list[str]:
    """The command prefix that runs a child under callgrind, writing ``out_file``."""
    sim = ["--cache-sim=yes", "--branch-sim=yes"] if cache_sim else []
    return ["valgrind", "--tool=callgrind", *sim, f"--callgrind-out-file={out_file}"]


def parse_callgrind(path: Path) -> dict[str, Any]:
    """Total instructions, every event's total, and calls and inclusive instructions
    of :data:`CG_FUNCTIONS`."""
    names: dict[str, str] = {}
    calls = dict.fromkeys(CG_FUNCTIONS, 0)
    inclusive = dict.fromkeys(CG_FUNCTIONS, 0)
    events = ["Ir"]
    totals: dict[str, int] = {}
    target: str | None = None
    pending: str | None = None
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split(":", 1)[1].split()
            elif line.startswith(("cfn=", "fn=")):
                ref = line.split("=", 1)[1].strip()
                if ref.startswith("("):
                    ident, _, name = ref.partition(")")
                    name = name.strip()
                    if name:
                        names[ident] = name
                    ref = names.get(ident, ident)
                if line.startswith("cfn="):
                    target = ref
            elif line.startswith("calls="):
                pending = target
                if target in calls:
                    calls[target] += int(line.split("=", 1)[1].split()[0])
            elif pending is not None:
                if pending in inclusive:
                    # "<line> <Ir> <other events...>": trailing zeros may be left out.
                    costs = line.split()
                    inclusive[pending] += int(costs[1]) if len(costs) > 1 else 0
                pending = None
            elif line.startswith(("summary:", "totals:")):
                values = [int(v) for v in line.split(":", 1)[1].split()]
                totals = dict(zip(events, values + [0] * (len(events) - len(values)), strict=True))
    return {"instructions": totals.get("Ir", 0), "events": totals, "calls": calls,
            "inclusive": inclusive}

