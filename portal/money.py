"""Money's one rounding rule: half up to cents, once per amount. Billing rates and invoices
with it; scheduling shows estimated costs with it, so the two agree."""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


def to_cents(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, ROUND_HALF_UP)
