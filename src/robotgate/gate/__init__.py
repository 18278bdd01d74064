"""The gate: :class:`RobotGate`, the facade over the politeness core, with its aiohttp adapter."""

from __future__ import annotations

from ..errors import Disallowed, GateClosed
from .gate import RobotGate

__all__ = ["Disallowed", "GateClosed", "RobotGate"]
