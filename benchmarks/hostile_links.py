"""``read_links`` on the crafted pages of issue 77 and on a page as sites write them.

    python benchmarks/hostile_links.py [--before COMMIT] [--scale 1.0]

For each page: the tracemalloc peak and the CPU time of one call, for this checkout's
``links.py`` and, with ``--before``, that commit's (loaded as a module of its own, as
``page_links.py`` does).  The crafted pages are ``<a href`` and 3,000,000 ``=``;
``<a `` and 2,000,000 ``x=1 `` then ``href=/late>``; ``<a `` 3,000,000 times (times
``--scale``).  Instructions on the normal page: ``page_links.py --before``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness.report import command_line
from benchmarks.page_links import PAGE_URL, _before_module, links_page


def pages(scale: float) -> dict[str, bytes]:
    n = int(1_000_000 * scale)
    return {
        "<a href + 3M '='": b"<a href" + b"=" * (3 * n),
        "<a + 2M 'x=1 ' + href": b"<a " + b"x=1 " * (2 * n) + b"href=/late>",
        "'<a ' x 3M": b"<a " * (3 * n),
        "normal 100 KB page": links_page(100 * 1024),
    }


def measure(read: Any, body: bytes) -> tuple[int, float]:
    tracemalloc.start()
    began = time.process_time()
    try:
        read(body, PAGE_URL)
        return tracemalloc.get_traced_memory()[1], time.process_time() - began
    finally:
        tracemalloc.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="a commit whose links.py is measured too")
    ap.add_argument("--scale", type=float, default=1.0, help="size of the crafted pages")
    args = ap.parse_args()
    from robotgate.links import read_links

    readers = {"after": read_links}
    if args.before:
        path = _before_module(args.before, Path(tempfile.mkdtemp()))
        spec = importlib.util.spec_from_file_location("links_before", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["links_before"] = module
        spec.loader.exec_module(module)
        readers["before"] = module.read_links
    print(f"{'page':26} {'MB':>5} " + " ".join(f"{n + ' peak MB':>16} {n + ' CPU s':>10}"
                                                for n in readers))
    for name, body in pages(args.scale).items():
        cells = []
        for read in readers.values():
            peak, cpu = measure(read, body)
            cells.append(f"{peak / 1e6:16.1f} {cpu:10.2f}")
        print(f"{name:26} {len(body) / 1e6:5.1f} " + " ".join(cells))
    print("\n" + command_line())


if __name__ == "__main__":
    main()
