"""The fleet slot check for adapters that cannot hook the moment the bytes leave."""

from __future__ import annotations

import asyncio

from ..politeness.admission import Admission
from ..politeness.fleet_slots import CURRENT, LateSlot
from ..politeness.scheduler import Group

__all__ = ["on_time"]


async def on_time(admission: Admission, group: Group) -> None:
    """Make sure the fleet slot just taken is not already past; ask again until one is.

    Called right before the request is handed to the client.  A request that
    would leave after its slot's deadline (the loop lagged) could land closer
    than the interval to another worker's next request: it takes a new slot.
    """
    fleet = admission.fleet
    if fleet is None:
        return
    loop = asyncio.get_running_loop()
    try:
        while (slot := CURRENT.get()) is not None:
            try:
                slot.check(loop.time())
            except LateSlot:
                fleet.missed(slot)
                CURRENT.set(None)
                gap = admission.scheduler.gap(group, group.interval)
                wait = await fleet.reserve(group.key, gap)  # sets CURRENT anew
                if wait:
                    await asyncio.sleep(wait)
                continue
            fleet.on_time()
            return
    finally:
        CURRENT.set(None)
