"""The gate: :class:`RobotGate`, the facade over the politeness core, with its aiohttp adapter."""

from __future__ import annotations

from ..errors import BodyTooLarge, Disallowed, GateClosed
from .gate import RobotGate

__all__ = ["BodyTooLarge", "Disallowed", "GateClosed", "RobotGate"]
