"""What use of the cluster would cost, at the catalog's prices: scheduling knows no billing,
so it asks whoever answers ``ExtensionPoint.USAGE_PRICES`` (billing does) and multiplies."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from portal.events import ExtensionPoint, checks_answers
from portal.money import to_cents

SECONDS_PER_HOUR = Decimal(3600)


@dataclass(frozen=True)
class UsagePrices:
    """An organization's hourly unit prices at a moment, keyed (GPU class, MIG profile, tier
    or "" for every tier): a whole GPU's hour, or a MIG instance's; a share is billed as its
    fraction of a GPU."""

    by_resource: Mapping[tuple[str, str, str], Decimal]

    def hourly(self, *, gpu_class: str, mig_profile: str = "", tier: str) -> Decimal | None:
        """One unit's hourly price: the tier's own item first, then the one for every tier."""
        key = (gpu_class, mig_profile)
        return self.by_resource.get((*key, tier), self.by_resource.get((*key, "")))

    def cost(
        self,
        *,
        gpu_class: str,
        mig_profile: str = "",
        tier: str,
        units: Decimal,
        span: timedelta,
    ) -> Decimal | None:
        """What ``units`` (GPUs, a share's fraction of one, or MIG instances) for ``span``
        cost, in cents; None when nothing prices them."""
        price = self.hourly(gpu_class=gpu_class, mig_profile=mig_profile, tier=tier)
        if price is None:
            return None
        hours = Decimal(span // timedelta(microseconds=1)) / (SECONDS_PER_HOUR * 10**6)
        return to_cents(price * units * hours)


def usage_prices(*, organization_id, at: datetime) -> UsagePrices:
    """The prices every registered check answers for the organization at ``at`` (the first
    answer wins for a key two of them price)."""
    merged: dict[tuple[str, str, str], Decimal] = {}
    for answer in checks_answers(
        ExtensionPoint.USAGE_PRICES, organization_id=organization_id, at=at
    ):
        for key, price in answer.items():
            merged.setdefault(key, price)
    return UsagePrices(merged)
