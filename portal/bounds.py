"""How far dates may go: the bounds every input date is held to, so that no date arithmetic
leaves Python's years 1 to 9999 (a 500) and no booking lies decades ahead.

- Bookings (reservations, and what orders hold) lie within ``BOOKING_HORIZON`` from now.
- A date that names a period of the past or present (usage, a month of invoices) lies in the
  years ``FIRST_YEAR`` to ``LAST_YEAR``.
"""

from datetime import date, datetime, timedelta

BOOKING_HORIZON_YEARS = 5
BOOKING_HORIZON = timedelta(days=365 * BOOKING_HORIZON_YEARS + 1)  # five years, a leap day in
FIRST_YEAR = 2000
LAST_YEAR = 2100


def booking_horizon(now: datetime) -> datetime:
    """The last instant a booking made at ``now`` may reach."""
    return now + BOOKING_HORIZON


def booking_horizon_error(instant: datetime, *, now: datetime) -> str | None:
    """Why ``instant`` is too far ahead to book, if it is."""
    if instant > booking_horizon(now):
        return f"At most {BOOKING_HORIZON_YEARS} years ahead."
    return None


def year_in_range(year: int) -> bool:
    return FIRST_YEAR <= year <= LAST_YEAR


def date_error(day: date) -> str | None:
    """Why ``day`` is not a date the portal has periods for, if it is not."""
    if not year_in_range(day.year):
        return f"A date in the years {FIRST_YEAR} to {LAST_YEAR}."
    return None
