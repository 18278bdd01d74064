"""The parsed corpus in few bytes, with every answer as before (issue 80).

Every file of the shared corpus, parsed and kept alive together, holds at most
3,500 bytes on average (tracemalloc); and each file's answers (decisions with
their rule and line, delays, sitemaps: ``corpus_answers.py``) are those the
parser gave before its rules were packed.
"""

from __future__ import annotations

import gc
import json
import tracemalloc

import pytest

from robotgate import RobotsTxt
from tests.robots.corpus_answers import CORPUS, DIGESTS, digest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CORPUS.is_dir(),
                       reason=f"the shared robots.txt corpus is not at {CORPUS}"),
]

#: The most bytes a parsed file may hold, on average over the corpus.
BYTES_A_FILE = 3_500


def test_the_parsed_corpus_holds_at_most_3500_bytes_a_file() -> None:
    bodies = [p.read_bytes() for p in sorted(CORPUS.iterdir()) if p.is_file()]
    RobotsTxt.parse(b"User-agent: *\nDisallow: /x\n")  # the parser's own caches, once
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = [RobotsTxt.parse(body) for body in bodies]
        gc.collect()
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(held) == 4231
    assert used / len(held) <= BYTES_A_FILE, f"{used / len(held):,.0f} bytes a file"


def test_every_answer_is_the_one_given_before() -> None:
    want: dict[str, str] = json.loads(DIGESTS.read_text())
    changed = [p.name for p in sorted(CORPUS.iterdir())
               if p.is_file() and digest(p.read_bytes(), p.name) != want.get(p.name)]
    assert len(want) == 4231
    assert changed == []
