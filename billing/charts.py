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
    """One label's part of a total, for a horizontal bar."""

    label: str
    gpu_hours: Decimal
    cost: Decimal
    percent: int  # of the largest part's GPU-hours, for the bar's width


def resource_label(row: dict) -> str:
    """A usage row's GPU class, with its MIG profile where it has one."""
    gpu_class = row["gpu_class"] or "CPU only"
    return f"{gpu_class} {row['mig_profile']}" if row["mig_profile"] else gpu_class


def daily_by_class(rows: list[dict]) -> DailyChart | None:
    """GPU-hours per day stacked by class (and MIG profile), the largest class at the bottom;
    None when there is nothing to draw."""
    per_day: dict[date, dict[str, Decimal]] = {}
    per_label: dict[str, Decimal] = {}
    for row in rows:
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


def shares(rows: list[dict], *, by) -> list[Share]:
    """GPU-hours and cost summed per ``by(row)``, largest first."""
    totals: dict[str, tuple[Decimal, Decimal]] = {}
    for row in rows:
        label = by(row)
        hours, cost = totals.get(label, (Decimal(0), Decimal(0)))
        totals[label] = (hours + row["gpu_hours"], cost + row["cost"])
    top = max((hours for hours, _ in totals.values()), default=Decimal(0)) or Decimal(1)
    ordered = sorted(totals.items(), key=lambda item: (-item[1][0], item[0]))
    return [
        Share(label=label, gpu_hours=hours, cost=cost, percent=round(hours / top * 100))
        for label, (hours, cost) in ordered
    ]
