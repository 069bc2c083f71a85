"""Template filters of the console."""

from datetime import timedelta

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
