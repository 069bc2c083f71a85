import shlex
from collections.abc import Sequence
from datetime import UTC, timedelta

from django import forms

from portal import clock
from portal.bounds import booking_horizon_error
from tenants.models import slug_validator

from .models import (
    IMAGE_MAX,
    QuotaGrant,
    Workload,
    image_reference_validator,
    mig_profile_validator,
)
from .selectors import CALENDAR_HOURS, BlockAsk
from .services import (
    QuotaAsk,
    ReservationRequest,
    WorkloadRequest,
    request_bounds,
    request_default,
)


class WorkloadSubmitForm(forms.Form):
    name = forms.CharField(max_length=40, validators=[slug_validator])
    kind = forms.ChoiceField(choices=Workload.Kind.choices, initial=Workload.Kind.TRAINING)
    tier = forms.ChoiceField(choices=(), initial="training")
    image = forms.CharField(
        max_length=IMAGE_MAX,
        validators=[image_reference_validator],
        widget=forms.TextInput(attrs={"placeholder": "nvcr.io/nvidia/pytorch:25.01-py3"}),
        help_text="A container image reference, as the API takes it.",
    )
    command = forms.CharField(
        max_length=4000, required=False, help_text="As in a shell, e.g. torchrun train.py"
    )
    gpu_class = forms.ChoiceField(choices=(), required=False, label="GPU class")
    fallback_gpu_class = forms.ChoiceField(
        choices=(), required=False, label="Or else", help_text="Used when the first is full."
    )
    gpus = forms.IntegerField(**request_bounds("gpus"), initial=1, label="GPUs per replica")
    gpu_milli = forms.IntegerField(
        **request_bounds("gpu_milli"), initial=0, label="Or a GPU share (milli-GPU)"
    )
    mig_profile = forms.ChoiceField(choices=(), required=False, label="Or a MIG profile")
    mig_count = forms.IntegerField(**request_bounds("mig_count"), initial=0, label="MIG instances")
    replicas = forms.IntegerField(**request_bounds("replicas"), initial=request_default("replicas"))
    cpu_milli = forms.IntegerField(
        **request_bounds("cpu_milli"),
        initial=request_default("cpu_milli"),
        label="CPU per replica (milli-cores)",
    )
    memory_mib = forms.IntegerField(
        **request_bounds("memory_mib"),
        initial=request_default("memory_mib"),
        label="Memory per replica (MiB)",
    )
    max_runtime_minutes = forms.IntegerField(
        **{
            bound: seconds // 60 for bound, seconds in request_bounds("max_runtime_seconds").items()
        },
        required=False,
    )
    env = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="KEY=value per line"
    )
    region = forms.ChoiceField(
        choices=(), required=False, help_text="Run only there; any: wherever there is room."
    )
    requeue_on_eviction = forms.BooleanField(
        required=False, initial=True, label="Back to the queue if preempted"
    )
    checkpoint_interval_minutes = forms.IntegerField(
        **{
            bound: seconds // 60
            for bound, seconds in request_bounds("checkpoint_interval_seconds").items()
        },
        required=False,
        help_text="It saves a checkpoint this often: preempted, it loses only the work since.",
    )

    def __init__(
        self, *args, tiers, gpu_classes, granted: str | None, regions: Sequence[str] = (), **kwargs
    ):
        """``granted``: the class the organization's quotas grant whole GPUs of, preselected
        with one GPU (else CPU only), so that the form as it opens submits; ``regions``: the
        clusters' regions a workload may be pinned to."""
        super().__init__(*args, **kwargs)
        classes = [(c.name, c.name) for c in gpu_classes]
        profiles = sorted({profile for c in gpu_classes for profile in c.mig_profiles})
        self.fields["tier"].choices = [(t.name, f"{t.name} ({t.description})") for t in tiers]
        self.fields["gpu_class"].choices = [("", "none (CPU only)"), *classes]
        self.fields["fallback_gpu_class"].choices = [("", "no fallback"), *classes]
        self.fields["mig_profile"].choices = [("", "none"), *((p, p) for p in profiles)]
        self.fields["region"].choices = [("", "any region"), *((r, r) for r in regions)]
        self.fields["gpu_class"].initial = granted or ""
        self.fields["gpus"].initial = 1 if granted else request_default("gpus")

    def clean_command(self) -> tuple[str, ...]:
        try:
            return tuple(shlex.split(self.cleaned_data["command"]))
        except ValueError as error:
            raise forms.ValidationError(f"Unbalanced quotes: {error}.") from error

    def clean_env(self) -> dict[str, str]:
        env = {}
        for line in self.cleaned_data["env"].splitlines():
            if not line.strip():
                continue
            key, sep, value = line.partition("=")
            if not sep or not key.strip().isidentifier():
                raise forms.ValidationError(f"Not KEY=value: {line!r}.")
            env[key.strip()] = value
        return env

    def as_request(self) -> WorkloadRequest:
        data = self.cleaned_data
        classes = tuple(c for c in (data["gpu_class"], data["fallback_gpu_class"]) if c)
        minutes = data["max_runtime_minutes"]
        every = data["checkpoint_interval_minutes"]
        return WorkloadRequest(
            name=data["name"],
            kind=data["kind"],
            tier=data["tier"],
            image=data["image"],
            command=data["command"],
            gpu_classes=tuple(dict.fromkeys(classes)),
            gpus=data["gpus"],
            gpu_milli=data["gpu_milli"],
            mig_profile=data["mig_profile"],
            mig_count=data["mig_count"],
            replicas=data["replicas"],
            cpu_milli=data["cpu_milli"],
            memory_mib=data["memory_mib"],
            max_runtime=timedelta(minutes=minutes) if minutes else None,
            env=data["env"],
            requeue_on_eviction=data["requeue_on_eviction"],
            checkpoint_interval=timedelta(minutes=every) if every else None,
            region=data["region"],
        )


class ReservationForm(forms.Form):
    """A reservation as the console asks for it: a start in UTC and a length in hours."""

    gpu_class = forms.ChoiceField(choices=(), label="GPU class")
    pool = forms.ChoiceField(
        choices=(), required=False, help_text="Any pool of the class if empty."
    )
    mig_profile = forms.ChoiceField(
        choices=(),
        required=False,
        label="Whole GPUs or MIG instances",
        help_text="A MIG profile of the class reserves its instances.",
    )
    gpus = forms.IntegerField(min_value=1, max_value=100_000, initial=8, label="How many")
    starts_at = forms.DateTimeField(
        label="Starts (UTC)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"],
    )
    hours = forms.IntegerField(min_value=1, max_value=24 * 14, initial=4)
    weeks = forms.IntegerField(min_value=1, max_value=52, initial=1, help_text="Repeat weekly.")
    project = forms.ChoiceField(
        choices=(), required=False, help_text="The whole organization if empty."
    )

    def __init__(self, *args, pools, projects, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["gpu_class"].choices = [
            (name, name) for name in sorted({pool.gpu_class.name for pool in pools})
        ]
        self.fields["pool"].choices = [("", "any")] + [
            (pool.name, f"{pool.name} ({pool.gpu_class.name})") for pool in pools
        ]
        profiles = sorted({profile for pool in pools for profile in pool.gpu_class.mig_profiles})
        self.fields["mig_profile"].choices = [("", "whole GPUs")] + [
            (profile, f"{profile} instances") for profile in profiles
        ]
        self.fields["project"].choices = [("", "whole organization")] + [
            (project.slug, project.name) for project in projects
        ]

    def clean_starts_at(self):
        # Bounded before the window's end is computed from it (9999-12-31T23:00 plus hours
        # is past the last date Python has); the service checks the rest.
        starts_at = self.cleaned_data["starts_at"].replace(tzinfo=UTC)
        too_far = booking_horizon_error(starts_at, now=clock.now())
        if too_far:
            raise forms.ValidationError(too_far)
        return starts_at

    def block_asked(self) -> tuple[str, str | None, BlockAsk] | None:
        """The class, pool (None: any) and block of whole GPUs for ``hours`` hours the form
        holds, valid or not yet (its start is what a proposal fills); None for MIG instances
        or a form lacking them."""
        wanted = ("gpu_class", "gpus", "hours")
        if self.is_bound:
            self.is_valid()
            data = self.cleaned_data
        else:
            data = {name: self.fields[name].initial for name in self.fields}
            data["gpu_class"] = next(iter(self.fields["gpu_class"].choices), ("",))[0]
        if any(not data.get(name) for name in wanted) or data.get("mig_profile"):
            return None
        block = BlockAsk(gpus=data["gpus"], hours=min(data["hours"], CALENDAR_HOURS))
        return data["gpu_class"], data.get("pool") or None, block

    def as_request(self) -> ReservationRequest:
        data = self.cleaned_data
        starts_at = data["starts_at"]
        return ReservationRequest(
            gpu_class=data["gpu_class"],
            gpus=data["gpus"],
            starts_at=starts_at,
            ends_at=starts_at + timedelta(hours=data["hours"]),
            pool=data["pool"] or None,
            project=data["project"] or None,
            mig_profile=data["mig_profile"] or None,
            weeks=data["weeks"],
        )


class QuotaRequestForm(forms.Form):
    gpu_class = forms.ChoiceField(choices=(), label="GPU class")
    resource = forms.ChoiceField(choices=QuotaGrant.Resource.choices)
    mig_profile = forms.CharField(
        max_length=20, required=False, validators=[mig_profile_validator], label="MIG profile"
    )
    amount = forms.IntegerField(
        min_value=1, max_value=1_000_000, help_text="More GPUs, milli-GPU or MIG instances."
    )
    reason = forms.CharField(max_length=1000, widget=forms.Textarea(attrs={"rows": 2}))
    until = forms.DateTimeField(
        required=False,
        label="Until (UTC)",
        help_text="Empty: for good.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"],
    )
    project = forms.ChoiceField(
        choices=(), required=False, help_text="The whole organization if empty."
    )

    def __init__(self, *args, classes, projects, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["gpu_class"].choices = [(c.name, c.name) for c in classes]
        self.fields["project"].choices = [("", "whole organization")] + [
            (project.slug, project.name) for project in projects
        ]

    @classmethod
    def prefill(cls, query) -> dict[str, str]:
        """The form's initial values given in a query string (the rest ignored); it validates
        them only once submitted."""
        return {name: query[name] for name in cls.base_fields if name in query}

    def as_ask(self) -> QuotaAsk:
        data = self.cleaned_data
        return QuotaAsk(
            gpu_class=data["gpu_class"],
            resource=data["resource"],
            mig_profile=data["mig_profile"],
            amount=data["amount"],
            reason=data["reason"],
            until=data["until"],
            project=data["project"] or None,
        )
