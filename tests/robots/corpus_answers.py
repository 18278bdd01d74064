"""What robotgate answers about each file of the shared corpus, as one digest a file.

For every file: ``decide`` (its whole value: verdict, reason with rule and
line, group, usage) and ``allowed`` for a fixed sample of URLs and agents,
each agent's delay lines, the sitemaps and the agents named.  The digests in
``corpus_answers.json`` were written by the parser before its memory layout
changed (issue 80); ``tests/robots/test_corpus_memory.py`` checks the parser
still gives them.  To see what changed in a file, compare :func:`answers`
under both trees; to write the digests again (only when an answer is meant
to change)::

    PYTHONPATH=src python -m tests.robots.corpus_answers --write
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

from robotgate import Decision, RobotsTxt

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "robots"
DIGESTS = Path(__file__).with_name("corpus_answers.json")

AGENTS = ("Googlebot", "bingbot/2.0", "MyBot/1.0 (+https://example.com/bot)")
COMMON = ("/", "/index.html", "/search?q=shoes", "/admin/", "/ツ/%7Euser?x=%e3%83%84",
          "/robots.txt", "/a/../wp-admin/x")
_RULE_PATH = re.compile(rb"^\s*(?:dis)?allow\s*:\s*(\S+)", re.IGNORECASE | re.MULTILINE)
# Rules sampled a file, spread over it; agents it names, besides AGENTS.
_RULES = 6
_OWN_AGENTS = 2


def _paths(raw: bytes) -> list[str]:
    """COMMON, and paths made from a few of the file's own rules: the rule as a path,
    with a tail, and its directory."""
    found = _RULE_PATH.findall(raw)
    step = max(1, len(found) // _RULES)
    out = list(COMMON)
    for m in found[::step][:_RULES]:
        p = m.decode("utf-8", "replace").replace("*", "x").rstrip("$")
        p = p if p.startswith("/") else "/" + p
        out += [p, p + "x/y.html", p.rpartition("/")[0] + "/"]
    return out


def _as_written(decision: Decision) -> str:
    """The decision's repr as the digests were written: without the fetch ``error``
    field added since (a parsed file's decision never has one)."""
    assert decision.error is None
    return repr(decision).replace(", error=None)", ")")


def answers(raw: bytes, host: str) -> list[str]:
    """The answers to the file's sample of questions, each as its repr."""
    rules = RobotsTxt.parse(raw)
    named = sorted(a for a in rules.agents if a != "*")
    step = max(1, len(named) // _OWN_AGENTS)
    agents = [*AGENTS, *named[::step][:_OWN_AGENTS]]
    out = [repr(rules.sitemaps), repr(sorted(rules.agents))]
    for agent in agents:
        for k, path in enumerate(_paths(raw)):
            url = f"https://{host}{path}" if k % 2 else path
            out.append(_as_written(rules.decide(url, agent)))
            out.append(repr(rules.allowed(url, agent)))
        out.append(repr(rules.delay_lines(agent)))
        out.append(repr((rules.crawl_delay(agent), rules.request_rate(agent))))
    return out


def digest(raw: bytes, host: str) -> str:
    return hashlib.sha256("\n".join(answers(raw, host)).encode()).hexdigest()[:20]


def digests() -> dict[str, str]:
    """Every corpus file's digest, by file name."""
    return {p.name: digest(p.read_bytes(), p.name) for p in sorted(CORPUS.iterdir())
            if p.is_file()}


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    DIGESTS.write_text(json.dumps(digests(), indent=0, sort_keys=True) + "\n")
    print(f"wrote {DIGESTS}")
