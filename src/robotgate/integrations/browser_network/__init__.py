"""The network of a browser the gate is the only network of, written once for
Playwright's ``attach``, crawlee's ``PlaywrightCrawler`` and crawl4ai's
``RobotGateCrawler``: the floor (:mod:`.floor`: Chromium launched with no network but
the gate, and the check of it) and the route's network duties that Chromium's own stack
would do (:mod:`.cookies`: the cookies of the hops the route follows)."""

try:  # the client comes with an extra: say which, not a bare ModuleNotFoundError
    import playwright.async_api  # noqa: F401
except ImportError as _exc:
    raise ImportError(f"{__name__} needs Playwright: pip install 'robotgate[playwright]'") from _exc
