"""Charts of the console's usage pages, drawn as inline SVG from rated usage rows: no charting
library and nothing fetched from elsewhere (many GPU clusters have no internet)."""

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

# Colour-blind-safe (Okabe and Ito, "Color Universal Design", 2008), then greys.
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442")
OTHERS = "#8b949e"
HEIGHT = 120  # SVG units
BAR = 14
GAP = 2


@dataclass(frozen=True)
class Segment:
    """One class's part of one day's bar."""

    x: int
    y: int
    height: int
    colour: str
    day: date
    label: str
    hours: Decimal


@dataclass(frozen=True)
class DailyChart:
    segments: list[Segment]
    legend: list[tuple[str, str]]  # (label, colour)
    width: int
    height: int = HEIGHT
    bar: int = BAR


@dataclass(frozen=True)
class Share:
    """One label's part of a total, for a horizontal bar: its use in each unit (None: none of
    that unit), never added together, and its cost."""

    label: str
    gpu_hours: Decimal | None
    mig_instance_hours: Decimal | None
    cost: Decimal
    percent: int  # of the largest part's cost (the one measure every unit shares)


def resource_label(row: dict) -> str:
    """A usage row's GPU class, with its MIG profile where it has one."""
    gpu_class = row["gpu_class"] or "CPU only"
    return f"{gpu_class} {row['mig_profile']}" if row["mig_profile"] else gpu_class


def daily_by_class(rows: list[dict]) -> DailyChart | None:
    """GPU-hours (whole GPUs and shares) per day stacked by class, the largest class at the
    bottom; None when there is nothing to draw. MIG instance-hours are another unit: not
    stacked onto GPU-hours (the tables show them)."""
    per_day: dict[date, dict[str, Decimal]] = {}
    per_label: dict[str, Decimal] = {}
    for row in rows:
        if row["gpu_hours"] is None:
            continue
        label = resource_label(row)
        day = per_day.setdefault(row["day"], {})
        day[label] = day.get(label, Decimal(0)) + row["gpu_hours"]
        per_label[label] = per_label.get(label, Decimal(0)) + row["gpu_hours"]
    top = max((sum(day.values()) for day in per_day.values()), default=Decimal(0))
    if not top:
        return None
    labels = sorted(per_label, key=lambda label: (-per_label[label], label))
    colours = {
        label: PALETTE[index] if index < len(PALETTE) else OTHERS
        for index, label in enumerate(labels)
    }
    segments = []
    for index, (day, hours_of) in enumerate(sorted(per_day.items())):
        bottom = HEIGHT
        for label in labels:
            hours = hours_of.get(label)
            if not hours:
                continue
            height = max(round(float(hours / top) * HEIGHT), 1)
            bottom -= height
            segments.append(
                Segment(
                    x=index * (BAR + GAP),
                    y=bottom,
                    height=height,
                    colour=colours[label],
                    day=day,
                    label=label,
                    hours=hours,
                )
            )
    return DailyChart(
        segments=segments,
        legend=[(label, colours[label]) for label in labels],
        width=len(per_day) * (BAR + GAP),
    )


def _plus(total: Decimal | None, hours: Decimal | None) -> Decimal | None:
    return total if hours is None else (total or Decimal(0)) + hours


def shares(rows: list[dict], *, by) -> list[Share]:
    """GPU-hours, MIG instance-hours and cost summed per ``by(row)``, the costliest first
    (then the most GPU-hours)."""
    totals: dict[str, tuple[Decimal | None, Decimal | None, Decimal]] = {}
    for row in rows:
        label = by(row)
        gpu_hours, mig_hours, cost = totals.get(label, (None, None, Decimal(0)))
        totals[label] = (
            _plus(gpu_hours, row["gpu_hours"]),
            _plus(mig_hours, row.get("mig_instance_hours")),
            cost + row["cost"],
        )
    top = max((cost for _, _, cost in totals.values()), default=Decimal(0)) or Decimal(1)
    ordered = sorted(totals.items(), key=lambda item: (-item[1][2], -(item[1][0] or 0), item[0]))
    return [
        Share(
            label=label,
            gpu_hours=gpu_hours,
            mig_instance_hours=mig_hours,
            cost=cost,
            percent=round(cost / top * 100),
        )
        for label, (gpu_hours, mig_hours, cost) in ordered
    ]


# The operator's books: one bar per pool, its hours stacked by category, in the order of
# ``billing.allocation.CATEGORIES`` (use first, idle after, unavailable last).
CATEGORY_LABELS = {
    "used_billed": "Used and billed",
    "reserved_used": "Reserved and used",
    "reserved_lent": "Reserved and lent",
    "reserved_idle": "Reserved and idle",
    "guarantee_idle": "Granted quota idle",
    "unallocated_idle": "Unallocated idle",
    "unavailable": "Unavailable",
}
POOL_BAR_WIDTH = 600  # SVG units


@dataclass(frozen=True)
class PoolSegment:
    x: int
    width: int
    colour: str
    label: str
    hours: Decimal


def books_by_category(hours: dict[str, Decimal]) -> list[PoolSegment]:
    """One pool's hours as a horizontal bar of ``POOL_BAR_WIDTH`` stacked by category (a
    category with any hours at least 1 unit wide); empty for a pool with no hours."""
    total = sum(hours.values(), Decimal(0))
    if not total:
        return []
    segments, x = [], 0
    for index, (name, label) in enumerate(CATEGORY_LABELS.items()):
        if not hours.get(name):
            continue
        width = max(round(float(hours[name] / total) * POOL_BAR_WIDTH), 1)
        colour = PALETTE[index] if index < len(PALETTE) else OTHERS
        segments.append(
            PoolSegment(x=x, width=width, colour=colour, label=label, hours=hours[name])
        )
        x += width
    return segments


def books_legend() -> list[tuple[str, str]]:
    return [
        (label, PALETTE[index] if index < len(PALETTE) else OTHERS)
        for index, label in enumerate(CATEGORY_LABELS.values())
    ]
