"""Helpers the tests share; ``children/`` holds the programs tests run as child processes."""

from pathlib import Path

#: The child programs: ``python CHILDREN / "name.py" ARGS`` with ``testbed.children.child_env()``.
CHILDREN = Path(__file__).resolve().parent / "children"
