"""The fleet slot check for adapters that cannot hook the moment the bytes leave."""

from __future__ import annotations

from ..politeness.admission import Admission
from ..politeness.scheduler import Group

__all__ = ["on_time"]


async def on_time(admission: Admission, group: Group) -> None:
    """:meth:`Admission.on_time`: a late fleet slot is given up and asked for again."""
    await admission.on_time(group)
