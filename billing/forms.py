from datetime import UTC, timedelta
from decimal import Decimal

from django import forms

from portal import clock
from portal.bounds import booking_horizon_error

from .services import OrderRequest


class OrderForm(forms.Form):
    """An order as the console asks for it: a start in UTC and a length in hours."""

    item = forms.ChoiceField(choices=())
    quantity = forms.IntegerField(
        min_value=1, max_value=100_000, initial=1, help_text="Reserved GPUs, or packages."
    )
    starts_at = forms.DateTimeField(
        label="Starts (UTC)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"],
    )
    hours = forms.IntegerField(min_value=1, max_value=24 * 366, initial=4)
    project = forms.ChoiceField(
        choices=(), required=False, help_text="The whole organization if empty."
    )
    pool = forms.ChoiceField(
        choices=(),
        required=False,
        help_text="The pool to dedicate; for a reservation, any pool of its class if empty.",
    )

    def __init__(self, *args, items, projects, pools, **kwargs):
        super().__init__(*args, **kwargs)
        # What is billed as it is used (on demand) is not ordered.
        self.fields["item"].choices = [(item.slug, item.name) for item in items if item.orderable]
        self.fields["pool"].choices = [("", "any")] + [(pool.name, pool.name) for pool in pools]
        self.fields["project"].choices = [("", "whole organization")] + [
            (project.slug, project.name) for project in projects
        ]

    def clean_starts_at(self):
        # The service bounds the start too; here only so that the end is a date at all.
        starts_at = self.cleaned_data["starts_at"].replace(tzinfo=UTC)
        if too_far := booking_horizon_error(starts_at, now=clock.now()):
            raise forms.ValidationError(too_far)
        return starts_at

    def as_request(self) -> OrderRequest:
        data = self.cleaned_data
        starts_at = data["starts_at"]
        return OrderRequest(
            item=data["item"],
            quantity=data["quantity"],
            starts_at=starts_at,
            ends_at=starts_at + timedelta(hours=data["hours"]),
            project=data["project"] or None,
            pool=data["pool"] or None,
        )


# The years a usage page may show: none has use before 2000, and a month's end must stay a date.
MONTHS_FROM, MONTHS_TO = 2000, 9998


class UsageMonthForm(forms.Form):
    """The month a usage page shows, as ``YYYY-MM`` (this month when absent)."""

    month = forms.RegexField(
        regex=r"^\d{4}-(0[1-9]|1[0-2])$",
        required=False,
        error_messages={"invalid": "A month is written YYYY-MM, as 2026-11."},
    )

    def clean_month(self) -> str:
        month = self.cleaned_data["month"]
        if month and not MONTHS_FROM <= int(month[:4]) <= MONTHS_TO:
            raise forms.ValidationError(f"A month from {MONTHS_FROM} to {MONTHS_TO}.")
        return month

    def year_month(self) -> tuple[int, int] | None:
        if not self.is_valid() or not self.cleaned_data["month"]:
            return None
        year, month = self.cleaned_data["month"].split("-")
        return int(year), int(month)


class BudgetForm(forms.Form):
    """A monthly budget of the organization or of one project, as an owner sets it."""

    project = forms.ChoiceField(choices=(), required=False, label="For")
    monthly_amount = forms.DecimalField(
        label="Monthly amount", min_value=Decimal("0.01"), max_digits=14, decimal_places=2
    )
    thresholds = forms.CharField(
        initial="50, 80, 100",
        help_text="Percentages of the amount whose crossing is mailed to owners and admins.",
    )
    hard_stop = forms.BooleanField(
        required=False,
        label="Refuse new submissions once it is all spent",
    )

    def __init__(self, *args, projects, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].choices = [("", "whole organization")] + [
            (project.slug, project.name) for project in projects
        ]

    def clean_thresholds(self) -> list[int]:
        parts = [part.strip() for part in self.cleaned_data["thresholds"].split(",")]
        if not all(part.isdigit() for part in parts if part):
            raise forms.ValidationError("Whole percentages separated by commas, as 50, 80, 100.")
        return [int(part) for part in parts if part]
