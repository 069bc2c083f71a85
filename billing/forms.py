from datetime import UTC, timedelta

from django import forms

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
        self.fields["item"].choices = [(item.slug, item.name) for item in items]
        self.fields["pool"].choices = [("", "any")] + [(pool.name, pool.name) for pool in pools]
        self.fields["project"].choices = [("", "whole organization")] + [
            (project.slug, project.name) for project in projects
        ]

    def as_request(self) -> OrderRequest:
        data = self.cleaned_data
        starts_at = data["starts_at"].replace(tzinfo=UTC)
        return OrderRequest(
            item=data["item"],
            quantity=data["quantity"],
            starts_at=starts_at,
            ends_at=starts_at + timedelta(hours=data["hours"]),
            project=data["project"] or None,
            pool=data["pool"] or None,
        )
