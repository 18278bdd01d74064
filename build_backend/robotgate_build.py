"""The build backend: setuptools, asking for mypy only when the build compiles.

A wheel compiles the hot path with mypyc (see src/robotgate/compiled.py)
unless ``ROBOTGATE_PURE=1``; an editable install compiles only with
``ROBOTGATE_COMPILE=1``.  Builds that do not compile need no mypy.
"""

from __future__ import annotations

import os
from typing import Any

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403  (the PEP 517 hooks this module does not change)

MYPY = "mypy==2.4.1"


def _compiles(editable: bool) -> bool:
    if os.environ.get("ROBOTGATE_PURE") == "1":
        return False
    return not editable or os.environ.get("ROBOTGATE_COMPILE") == "1"


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    extra = [MYPY] if _compiles(editable=False) else []
    return [*build_meta.get_requires_for_build_wheel(config_settings), *extra]


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    extra = [MYPY] if _compiles(editable=True) else []
    return [*build_meta.get_requires_for_build_editable(config_settings), *extra]
