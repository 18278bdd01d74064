"""The domain records (src/robotgate/records.py)."""

from __future__ import annotations

import dataclasses

from robotgate.records import RobotsEntry


def test_copy_keeps_every_field() -> None:
    # copy(body=...) spells the fields out for speed: a field added later must not be lost.
    values: dict[str, object] = {}
    for i, f in enumerate(dataclasses.fields(RobotsEntry)):
        values[f.name] = {"str": f"v{i}", "float": float(i), "int": i}.get(
            str(f.type).split(" ")[0], f"v{i}")
    values["body"] = b"old"
    entry = RobotsEntry(**values)  # type: ignore[arg-type]
    for body in (None, b"new"):
        assert entry.copy(body=body) == dataclasses.replace(entry, body=body)
    assert entry.copy(etag="e", body=None) == dataclasses.replace(entry, etag="e", body=None)
    assert entry.copy(body=None) is not entry and entry.body == b"old"
