"""testbed.scrapy_crawl_runner where robotgate's decoder finds no brotli.

    python -m tests.contract.scrapy_without_brotli '{"urls": [...], "settings": {...}}'

Scrapy (2.19) needs brotli itself and imports it first; after that, importing
brotli or brotlicffi fails, as where neither is installed.
"""

from __future__ import annotations

import contextlib
import sys

with contextlib.suppress(ImportError):
    import scrapy.utils._compression  # noqa: F401

sys.modules["brotli"] = None  # type: ignore[assignment]
sys.modules["brotlicffi"] = None  # type: ignore[assignment]

from testbed.scrapy_crawl_runner import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv))
