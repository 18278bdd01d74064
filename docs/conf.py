"""Sphinx configuration: MyST pages and an API reference from the docstrings (no network)."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

project = "robotgate"
author = "robotgate contributors"
copyright = "2026, robotgate contributors"
try:
    release = metadata.version("robotgate")
except metadata.PackageNotFoundError:
    release = "unknown"
version = release

extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# The clients' adapters are documented without their clients installed (the docs extra
# carries only the light ones: redis, httpx); autodoc imports them against stand-ins.
autodoc_mock_imports = ["scrapy", "twisted", "zope", "playwright", "crawlee", "impit", "crawl4ai"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}
# The gate's collaborators are private; their types appear in signatures only.
nitpicky = False

html_theme = "furo"
html_title = f"robotgate {release}"
