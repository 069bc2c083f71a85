"""Operators' policy replay page: a proposed change in a form, the recorded work replayed
under today's settings and under the change, figures side by side with a chart per class."""

from dataclasses import dataclass
from datetime import timedelta

from django import forms
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from portal import clock
from tenants.permissions import caller_of, require_operator

from .engine import PLACEMENT_POLICIES
from .selectors.replay import (
    PAGE_LIMITS,
    ReplayRefused,
    allocation_by,
    comparison_rows,
    policy_replay,
    span_parse,
)
from .selectors.replay_change import (
    ChangeError,
    change_from_options,
    change_from_yaml,
    changes_merged,
)

SPANS = [("1d", "1 day"), ("7d", "7 days"), ("14d", "14 days"), ("30d", "30 days")]
# The chart's geometry, in SVG units.
CHART_HEIGHT, BAR_WIDTH, BAR_GAP = 120, 6, 4
DAY = timedelta(days=1)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _items(label: str, placeholder: str, help_text: str) -> forms.CharField:
    """A field of one change item per line."""
    return forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": placeholder}),
        label=label,
        help_text=help_text,
    )


class PolicyChangeForm(forms.Form):
    since = forms.ChoiceField(choices=SPANS, initial="7d", label="Replay the last")
    set_quota = _items(
        "Quotas", "acme:H100-80GB=16:24", "One per line: ORG:RESOURCE=GUARANTEE[:LIMIT]."
    )
    weight = _items("Fair-share weights", "acme=2", "One per line: ORG=WEIGHT.")
    cohort = _items(
        "Cohorts", "acme=research", "One per line: ORG=COHORT (ORG= leaves every cohort)."
    )
    policy = forms.ChoiceField(
        required=False,
        choices=[("", "unchanged"), *((name, name) for name in PLACEMENT_POLICIES)],
        label="Placement policy",
    )
    tier = _items("Tier priorities", "batch=600", "One per line: TIER=PRIORITY.")
    half_life = forms.CharField(
        required=False,
        label="Fair-share half-life (hours)",
        widget=forms.TextInput(attrs={"placeholder": "168", "inputmode": "decimal"}),
        help_text="How soon past usage stops counting: 0 turns it off; empty keeps the setting.",
    )
    change = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        label="Or the change as YAML",
        help_text="As manage.py policy_replay --change takes it; the fields above win.",
    )

    def clean(self):
        data = super().clean()
        try:
            change = change_from_options(
                quotas=_lines(data.get("set_quota", "")),
                weights=_lines(data.get("weight", "")),
                cohorts=_lines(data.get("cohort", "")),
                placement=data.get("policy") or None,
                tiers=_lines(data.get("tier", "")),
                half_life=data.get("half_life") or None,
            )
            if data.get("change"):
                change = changes_merged(change_from_yaml(data["change"]), change)
        except ChangeError as error:
            self.add_error(error.field if error.field in self.fields else None, error.message)
            return data
        data["policy_change"] = change
        return data


@dataclass(frozen=True)
class Bar:
    x: int
    y: float
    height: float
    proposed: bool
    title: str


def _chart(blocks: list[tuple]) -> dict:
    """Paired bars per block of hours, current then proposed, scaled to the highest."""
    top = max((max(b, c) for _, b, c in blocks), default=0) or 1
    bars = []
    for index, (start, current, proposed) in enumerate(blocks):
        for offset, (gpus, is_proposed) in enumerate(((current, False), (proposed, True))):
            height = round(CHART_HEIGHT * gpus / top, 1)
            bars.append(
                Bar(
                    x=index * (2 * BAR_WIDTH + BAR_GAP) + offset * BAR_WIDTH,
                    y=CHART_HEIGHT - height,
                    height=height,
                    proposed=is_proposed,
                    title=f"{start:%Y-%m-%d %H:%M}: {gpus} GPUs"
                    f" {'proposed' if is_proposed else 'current'}",
                )
            )
    return {"bars": bars, "width": max(1, len(blocks)) * (2 * BAR_WIDTH + BAR_GAP)}


@login_required
def policy_replay_page(request):
    """Operators: the replay of a proposed change (run when the form is sent, by GET: it
    writes nothing)."""
    caller = caller_of(request)
    require_operator(caller)
    form = PolicyChangeForm(request.GET if "since" in request.GET else None)
    report, refused, charts = None, "", []
    if form.is_bound and form.is_valid():
        until = clock.now()
        try:
            report = policy_replay(
                caller=caller,
                since=until - span_parse(form.cleaned_data["since"]),
                until=until,
                change=form.cleaned_data["policy_change"],
                limits=PAGE_LIMITS,
            )
        except ReplayRefused as error:
            refused = str(error)
        except ChangeError as error:
            form.add_error(error.field if error.field in form.fields else None, error.message)
    if report is not None:
        hours = 24 if report.until - report.since > 2 * DAY else 1
        charts = [
            (gpu_class, hours, _chart(blocks))
            for gpu_class, blocks in allocation_by(report, hours=hours).items()
        ]
    return render(
        request,
        "scheduling/policy_replay.html",
        {
            "form": form,
            "report": report,
            "rows": comparison_rows(report) if report else [],
            "charts": charts,
            "chart_height": CHART_HEIGHT,
            "bar_width": BAR_WIDTH,
            "refused": refused,
            "limits": PAGE_LIMITS,
        },
    )
