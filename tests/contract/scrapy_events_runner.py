"""Run URLs through Scrapy (as tests/contract/scrapy_paths_runner.py does) and print,
after its results line, the gate's events as JSON: ``[[kind, url or origin, reason], ...]``
(``reason``: a wait's, else ``""``).

The events are heard through ``ROBOTGATE_ON_EVENT`` (an import path: :func:`hear`).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from robotgate.events import Event
from tests.contract import scrapy_paths_runner

HEARD: list[Event] = []


def hear(event: Event) -> None:
    HEARD.append(event)


def main(argv: list[str]) -> int:
    config: dict[str, Any] = json.loads(argv[1])
    config.setdefault("settings", {})["ROBOTGATE_ON_EVENT"] = f"{__name__}.hear"
    code = scrapy_paths_runner.main([argv[0], json.dumps(config)])
    print(json.dumps([[type(e).__name__, getattr(e, "url", e.origin),
                       getattr(e, "reason", "") if type(e).__name__ == "TurnWaited" else ""]
                      for e in HEARD]))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
