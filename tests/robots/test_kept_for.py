"""A gate keeps of each robots.txt only the groups its agent reads (issue 99).

``RobotsTxt.kept_for(agent)`` leaves out the groups naming other agents: the
answers for that agent, and for every agent the file does not name, are the
whole file's; an agent whose group was left out gets :class:`AgentLeftOut`.
"""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from robotgate import RobotsTxt
from robotgate.policy.site import Interpretation, parse_entry
from robotgate.records import Outcome, RobotsEntry
from robotgate.robots import AgentLeftOut
from tests.robots.corpus_answers import AGENTS, CORPUS, _paths

FILE = b"""User-agent: googlebot
Disallow: /g
Crawl-delay: 3

User-agent: bingbot
User-agent: mybot
Allow: /b
Disallow: /

User-agent: *
Disallow: /private
Allow: /private/ok*
Sitemap: https://example.com/sitemap.xml

User-agent: googlebot
Disallow: /also
"""


def _answers(rules: RobotsTxt, agent: str, paths: list[str]) -> list[str]:
    out = [repr(rules.sitemaps), repr(sorted(rules.agents))]
    for k, path in enumerate(paths):
        url = f"https://example.com{path}" if k % 2 else path
        out += [repr(rules.decide(url, agent)), repr(rules.allowed(url, agent))]
    out += [repr(rules.delay_lines(agent)), repr(rules.crawl_delay(agent)),
            repr(rules.request_rate(agent))]
    return out


@pytest.mark.parametrize("agent", ["Googlebot/2.1", "MyBot/1.0", "OtherBot/1.0"])
def test_the_rules_kept_for_an_agent_answer_as_the_whole_file(agent: str) -> None:
    paths = ["/", "/g/x", "/also", "/b", "/private/x", "/private/ok", "/robots.txt"]
    whole = RobotsTxt.parse(FILE)
    kept = RobotsTxt.parse(FILE).kept_for(agent)
    assert _answers(kept, agent, paths) == _answers(whole, agent, paths)
    assert _answers(kept, "NamedNowhere", paths) == _answers(whole, "NamedNowhere", paths)
    for other in {"googlebot", "bingbot", "mybot"} - {agent.split("/")[0].lower()}:
        with pytest.raises(AgentLeftOut, match=repr(other)):
            kept.allowed("/", other)
        with pytest.raises(AgentLeftOut):
            kept.decide("/", other)
        with pytest.raises(AgentLeftOut):
            kept.delay_lines(other)


def test_the_rules_kept_for_an_agent_hold_less() -> None:
    body = FILE + b"".join(b"User-agent: bot%d\nDisallow: /%d/private\n" % (i, i)
                           for i in range(50))
    held = []
    for keep in (False, True):
        gc.collect()
        tracemalloc.start()
        try:
            rules = RobotsTxt.parse(body)
            if keep:
                rules = rules.kept_for("OtherBot")
            gc.collect()
            held.append(tracemalloc.get_traced_memory()[0])
        finally:
            tracemalloc.stop()
    assert held[1] < held[0] / 2, held


def test_the_gate_keeps_its_agents_groups_only() -> None:
    entry = RobotsEntry("https://example.com", Outcome.OK, 0.0, 60.0, 200, FILE)
    rules = parse_entry(entry, Interpretation("OtherBot/1.0"))
    assert rules.allowed("/private/ok", "OtherBot/1.0") is True
    with pytest.raises(AgentLeftOut):
        rules.allowed("/", "Googlebot")


@pytest.mark.slow
@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared robots.txt corpus is not at {CORPUS}")
def test_every_8th_corpus_file_kept_for_an_agent_answers_as_the_whole() -> None:
    files = sorted(p for p in CORPUS.iterdir() if p.is_file())[::8]
    differ = []
    for p in files:
        raw = p.read_bytes()
        whole = RobotsTxt.parse(raw)
        named = sorted(a for a in whole.agents if a != "*")
        paths = _paths(raw)
        for agent in (*AGENTS, *named[:: max(1, len(named) // 2)][:2]):
            kept = RobotsTxt.parse(raw).kept_for(agent)
            for asked in (agent, "NamedNowhere"):
                if _answers(kept, asked, paths) != _answers(whole, asked, paths):
                    differ.append((p.name, agent, asked))
    assert len(files) == 529
    assert differ == []
