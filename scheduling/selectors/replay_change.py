"""A proposed change of the scheduling settings, as the policy replay takes it: from the
command's options or a YAML document of the same shape (docs/operators/policy-replay.md).

    quotas: {acme: {H100-80GB: {guarantee: 16, limit: 24}}}
    weights: {acme: 2}
    cohorts: {acme: research}
    placement: fgd_keep_scarce
    tiers: {batch: 50}
    half_life_hours: 0

Parsing checks the form; ``change_check`` checks the names against what exists."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation

import yaml

from .. import engine

PART = re.compile(
    r"^(?P<org>[-a-z0-9]+):(?P<resource>[^=\s]+)=(?P<guarantee>\d+)(?::(?P<limit>\d+))?$"
)
PAIR = re.compile(r"^(?P<key>[-a-z0-9_]+)=(?P<value>\S*)$")
SECTIONS = ("quotas", "weights", "cohorts", "placement", "tiers", "half_life_hours")
# The longest fair-share half-life a replay takes: a year (longer is as good as never decaying).
HALF_LIFE_MAX_HOURS = 8760


class ChangeError(ValueError):
    """A change that cannot be replayed; ``field`` names the option or section at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


@dataclass(frozen=True)
class QuotaChange:
    """An organization-wide quota of one resource ("H100-80GB", "A100-80GB/mig-1g.10gb",
    "L4/shared"): its new guarantee, and its limit (None: the old one, raised to the
    guarantee if lower)."""

    organization: str
    resource: str
    guarantee: int
    limit: int | None = None


@dataclass(frozen=True)
class PolicyChange:
    quotas: tuple[QuotaChange, ...] = ()
    weights: Mapping[str, Decimal] = field(default_factory=dict)
    cohorts: Mapping[str, str] = field(default_factory=dict)
    placement: str | None = None
    tiers: Mapping[str, int] = field(default_factory=dict)
    # The fair-share half-life in hours (0: past usage does not count; None: the setting's).
    half_life_hours: float | None = None

    @property
    def is_empty(self) -> bool:
        return not (
            self.quotas
            or self.weights
            or self.cohorts
            or self.placement
            or self.tiers
            or self.half_life_hours is not None
        )

    def lines(self) -> list[str]:
        """The change in words, one line per item."""
        said = [
            f"quota {q.organization} {q.resource}: guarantee {q.guarantee}"
            + (f", limit {q.limit}" if q.limit is not None else "")
            for q in self.quotas
        ]
        said += [f"weight {org}: {weight}" for org, weight in self.weights.items()]
        said += [f"cohort {org}: {cohort or '(none)'}" for org, cohort in self.cohorts.items()]
        said += [f"placement policy: {self.placement}"] if self.placement else []
        said += [f"tier {name}: priority {value}" for name, value in self.tiers.items()]
        if self.half_life_hours is not None:
            said.append(f"fair-share half-life: {half_life_words(self.half_life_hours)}")
        return said


def half_life_words(hours: float) -> str:
    """A half-life as the replay says it: "168 h" or "0 h (past usage does not count)"."""
    return f"{hours:g} h" + (" (past usage does not count)" if not hours else "")


def _quota(text: str) -> QuotaChange:
    match = PART.match(text.strip())
    if not match:
        raise ChangeError("set_quota", f"{text!r} is not ORG:RESOURCE=GUARANTEE[:LIMIT].")
    limit = int(match["limit"]) if match["limit"] is not None else None
    change = QuotaChange(match["org"], match["resource"], int(match["guarantee"]), limit)
    if limit is not None and limit < change.guarantee:
        raise ChangeError("set_quota", f"{text!r}: the limit is below the guarantee.")
    return change


def _pairs(option: str, texts: Iterable[str]) -> dict[str, str]:
    pairs = {}
    for text in texts:
        match = PAIR.match(text.strip())
        if not match:
            raise ChangeError(option, f"{text!r} is not NAME=VALUE.")
        pairs[match["key"]] = match["value"]
    return pairs


def _weight(org: str, value: object) -> Decimal:
    try:
        weight = Decimal(str(value))
    except InvalidOperation:
        raise ChangeError("weight", f"{org}: {value!r} is not a number.") from None
    if not weight.is_finite() or weight <= 0:
        raise ChangeError("weight", f"{org}: a weight is a number above 0, not {value}.")
    return weight


def _tier(name: str, value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise ChangeError("tier", f"{name}: {value!r} is not a whole number.") from None


def _half_life(value: object) -> float | None:
    if value is None or value == "":
        return None
    try:
        hours = float(str(value))
    except ValueError:
        raise ChangeError("half_life", f"{value!r} is not a number of hours.") from None
    if not 0 <= hours <= HALF_LIFE_MAX_HOURS:
        raise ChangeError(
            "half_life", f"a half-life is 0 (off) to {HALF_LIFE_MAX_HOURS} hours, not {value}."
        )
    return hours


def change_from_options(
    *,
    quotas: Iterable[str] = (),
    weights: Iterable[str] = (),
    cohorts: Iterable[str] = (),
    placement: str | None = None,
    tiers: Iterable[str] = (),
    half_life: str | None = None,
) -> PolicyChange:
    """The change the command's options (or the staff form's fields) say."""
    return PolicyChange(
        quotas=tuple(_quota(text) for text in quotas),
        weights={org: _weight(org, v) for org, v in _pairs("weight", weights).items()},
        cohorts=_pairs("cohort", cohorts),
        placement=placement or None,
        tiers={name: _tier(name, v) for name, v in _pairs("tier", tiers).items()},
        half_life_hours=_half_life(half_life),
    )


def change_from_yaml(text: str) -> PolicyChange:
    """The change a YAML document says (its sections are those of ``PolicyChange``)."""
    try:
        document = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        raise ChangeError("change", f"not YAML: {error}") from None
    if not isinstance(document, dict) or set(document) - set(SECTIONS):
        raise ChangeError("change", f"a mapping of {', '.join(SECTIONS)}.")
    for section in ("quotas", "weights", "cohorts", "tiers"):
        if not isinstance(document.get(section) or {}, dict):
            raise ChangeError(section, "a mapping by name.")
    quotas = []
    for org, resources in (document.get("quotas") or {}).items():
        if not isinstance(resources, dict):
            raise ChangeError("quotas", f"{org}: a mapping of resource to guarantee and limit.")
        for resource, amounts in resources.items():
            if not isinstance(amounts, dict) or "guarantee" not in amounts:
                amounts = {"guarantee": amounts}
            limit = amounts.get("limit")
            text = f"{org}:{resource}={amounts['guarantee']}" + (f":{limit}" if limit else "")
            quotas.append(_quota(text))
    placement = document.get("placement")
    if placement is not None and not isinstance(placement, str):
        raise ChangeError("placement", "the name of a placement policy.")
    return PolicyChange(
        quotas=tuple(quotas),
        weights={str(k): _weight(str(k), v) for k, v in (document.get("weights") or {}).items()},
        cohorts={str(k): str(v or "") for k, v in (document.get("cohorts") or {}).items()},
        placement=placement,
        tiers={str(k): _tier(str(k), v) for k, v in (document.get("tiers") or {}).items()},
        half_life_hours=_half_life(document.get("half_life_hours")),
    )


def changes_merged(base: PolicyChange, over: PolicyChange) -> PolicyChange:
    """``base`` with what ``over`` says on top (a file's change, then the options')."""
    said = {(q.organization, q.resource) for q in over.quotas}
    return PolicyChange(
        quotas=(
            *(q for q in base.quotas if (q.organization, q.resource) not in said),
            *over.quotas,
        ),
        weights={**base.weights, **over.weights},
        cohorts={**base.cohorts, **over.cohorts},
        placement=over.placement or base.placement,
        tiers={**base.tiers, **over.tiers},
        half_life_hours=(
            over.half_life_hours if over.half_life_hours is not None else base.half_life_hours
        ),
    )


def _known(option: str, name: str, known: Iterable[str], what: str) -> None:
    known = sorted(known)
    if name not in known:
        raise ChangeError(option, f"no {what} {name!r} (known: {', '.join(known) or 'none'}).")


def _gpu_class(name: str, gpu_classes: set[str]) -> str:
    """A GPU class by its name, or by the start of it when only one class starts so ("H100")."""
    starting = [c for c in gpu_classes if c.startswith(name)]
    if name not in gpu_classes and len(starting) == 1:
        return starting[0]
    _known("set_quota", name, gpu_classes, "GPU class")
    return name


def change_check(
    change: PolicyChange,
    *,
    organizations: Iterable[str],
    gpu_classes: Iterable[str],
    tiers: Iterable[str],
) -> PolicyChange:
    """The change with its GPU classes named in full, once every name it gives exists:
    organizations, GPU classes, tiers, the placement policy."""
    organizations, gpu_classes = set(organizations), set(gpu_classes)
    quotas = []
    for quota in change.quotas:
        _known("set_quota", quota.organization, organizations, "organization")
        gpu_class, _, form = quota.resource.partition("/")
        resource = "/".join([_gpu_class(gpu_class, gpu_classes), *([form] if form else [])])
        quotas.append(replace(quota, resource=resource))
    for org in (*change.weights, *change.cohorts):
        _known("weight" if org in change.weights else "cohort", org, organizations, "organization")
    for name in change.tiers:
        _known("tier", name, tiers, "tier")
    if change.placement is not None:
        _known("policy", change.placement, engine.PLACEMENT_POLICIES, "placement policy")
    return replace(change, quotas=tuple(quotas))
