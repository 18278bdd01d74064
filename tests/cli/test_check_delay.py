"""``robotgate check --crawl-delay`` names the line that gave the delay, and the
lines it read as asking nothing, with why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from robotgate.cli import main

ROBOTS = """\
User-agent: fastbot
Crawl-delay: 1

User-agent: slowbot
Crawl-delay: 3   # seconds
Request-rate: 1/-5
Crawl delay: 1,5
Request-rate: 1/10s
Request-rate: 1/2s
"""


@pytest.fixture
def robots_file(tmp_path: Path) -> Path:
    path = tmp_path / "robots.txt"
    path.write_text(ROBOTS)
    return path


def check(robots: Path, agent: str, capsys: pytest.CaptureFixture[str], *more: str) -> str:
    assert main(["check", str(robots), "--crawl-delay", "--agent", agent, *more]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def test_the_text_names_the_lines_that_gave_the_delay_and_the_rate(
    robots_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = check(robots_file, "SlowBot/1.0", capsys)
    assert out.splitlines() == [
        "crawl-delay   3s for 'SlowBot/1.0', by line 5: Crawl-delay: 3   # seconds",
        "request-rate  1 per 10s, by line 8: Request-rate: 1/10s",
        "ignored       line 6: Request-rate: 1/-5 (not a rate such as 1/10s)",
        "ignored       line 7: Crawl delay: 1,5 (not a number of seconds)",
    ]


def test_another_robot_of_the_same_group_gets_its_own_line(
    robots_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = check(robots_file, "FastBot", capsys)
    assert out.splitlines() == ["crawl-delay   1s for 'FastBot', by line 2: Crawl-delay: 1"]
    out = check(robots_file, "OtherBot", capsys)
    assert out.splitlines() == ["crawl-delay   none for 'OtherBot'"]


def test_json_carries_the_lines(robots_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = json.loads(check(robots_file, "slowbot", capsys, "--json"))
    assert record["crawl_delay"] == 3.0
    assert record["crawl_delay_line"] == {"line": 5, "text": "Crawl-delay: 3   # seconds"}
    assert record["request_rate"] == {"requests": 1, "seconds": 10.0}
    assert record["request_rate_line"] == {"line": 8, "text": "Request-rate: 1/10s"}
    assert record["ignored_delay_lines"] == [
        {"line": 6, "text": "Request-rate: 1/-5", "reason": "not a rate such as 1/10s"},
        {"line": 7, "text": "Crawl delay: 1,5", "reason": "not a number of seconds"},
    ]
    record = json.loads(check(robots_file, "OtherBot", capsys, "--json"))
    assert record["crawl_delay"] is None and record["crawl_delay_line"] is None
    assert record["ignored_delay_lines"] == []
