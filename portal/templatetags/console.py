"""Template filters of the console."""

from datetime import datetime, timedelta

from django import template

register = template.Library()


@register.filter
def duration(value: timedelta | None) -> str:
    """A span as people read it: "45 s", "12 min", "3 h 05 min", "2 d 4 h"."""
    if value is None:
        return ""
    seconds = max(int(value.total_seconds()), 0)
    days, seconds = divmod(seconds, 86_400)
    hours, seconds = divmod(seconds, 3_600)
    minutes, seconds = divmod(seconds, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min"
    return f"{seconds} s"


@register.simple_tag
def start_range(likely: datetime | None, low: datetime | None, high: datetime | None) -> str:
    """An estimated start as people read it: "likely Thu 10:00 (between 09:10 and 13:40)";
    a bound on another day than the most likely start names its day too (UTC)."""
    if likely is None:
        return ""

    def at(moment: datetime) -> str:
        same_day = moment.date() == likely.date()
        return moment.strftime("%H:%M" if same_day else "%a %H:%M")

    text = f"likely {likely.strftime('%a %H:%M')}"
    if low is None or (low == likely == high):
        return text
    if high is None:
        return f"{text} (not before {at(low)})"
    return f"{text} (between {at(low)} and {at(high)})"
