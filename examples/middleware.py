"""robotgate as aiohttp middleware: an ordinary ``ClientSession``, made polite.

    python examples/middleware.py https://example.com/a https://example.com/private/b ...

The session's requests all pass through ``gate.middleware``: a URL that
robots.txt forbids raises :class:`~robotgate.Disallowed` from ``session.get``
(it never reaches the site), and requests to one host are spaced by the
gate however many tasks send them at once.  Importable: ``await main(urls)``
returns each URL's status or the reason it was skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

import aiohttp

from robotgate import Disallowed, InvalidURL, RobotGate

AGENT = "ExampleFetcher/1.0 (+https://example.com/bot)"


async def main(
    urls: Sequence[str],
    *,
    agent: str = AGENT,
    from_: str | None = None,
    delay: float = 1.0,
    verbose: bool = False,
) -> dict[str, int | str]:
    """Fetch ``urls`` all at once through a gated session; the gate paces them."""
    results: dict[str, int | str] = {}
    async with (
        RobotGate(agent, from_=from_, delay=delay) as gate,
        aiohttp.ClientSession(middlewares=[gate.middleware]) as session,
    ):

        async def get(url: str) -> None:
            try:
                async with session.get(url) as resp:
                    body = await resp.read()
                results[url] = resp.status
                if verbose:
                    print(f"{resp.status} {url} ({len(body)} bytes)")
            except Disallowed as no:
                results[url] = f"skipped: {no.decision}"
                if verbose:
                    print(f"skip {url}: {no.decision}")
            except (aiohttp.ClientError, asyncio.TimeoutError, InvalidURL) as exc:
                results[url] = f"failed: {exc!r}"
                if verbose:
                    print(f"fail {url}: {exc!r}")

        # All at once: the gate, not this loop, decides when each request goes out.
        await asyncio.gather(*(get(url) for url in urls))
    return results


def _cli(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("urls", nargs="+", metavar="URL")
    parser.add_argument("--agent", default=AGENT)
    parser.add_argument("--from", dest="from_", metavar="EMAIL")
    parser.add_argument("--delay", type=float, default=1.0)
    args = parser.parse_args(argv)
    try:
        asyncio.run(main(args.urls, agent=args.agent, from_=args.from_, delay=args.delay,
                         verbose=True))
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
