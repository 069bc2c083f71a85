"""The last cycle's parked answers (``engine.Parking``), kept in the process between cycles:
the next cycle reuses those that still hold instead of deciding their requests again. Exact
whoever made them (even a cycle rolled back): the engine reuses an answer only on the world it
was made on."""

from .. import engine

# One process runs a cycle at a time.
_kept: dict[str, engine.Parking] = {}


def parked() -> engine.Parking | None:
    return _kept.get("parking")


def park(parking: engine.Parking) -> None:
    _kept["parking"] = parking


def forget() -> None:
    """Drop the parked answers (a benchmark's cycle that must decide every request)."""
    _kept.clear()
