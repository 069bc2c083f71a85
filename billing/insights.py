"""Billing's rules on the operators' insights page (registered in BillingConfig.ready() at
``ExtensionPoint.OPERATOR_INSIGHTS``): use rated with no price in force, which no invoice may be
issued with until finance prices it."""

from datetime import datetime

from scheduling.insights import SUBJECTS_SHOWN, Insight

from . import selectors


def unpriced_usage(*, now: datetime) -> Insight | None:
    """Use (or reserved capacity) billed at nothing because no price was in force. (What the
    cluster offers with no price, before anyone uses it, admin's catalog page and the
    ``portal_unpriced_resources`` metric tell.)"""
    used = selectors.usage_unpriced()
    if not used:
        return None
    organizations = len({use.organization for use in used})
    return Insight(
        rule="unpriced_usage",
        title="Use with no price in force",
        finding=(
            f"{len(used)} kind{'s' * (len(used) > 1)} of use of {organizations}"
            f" organization{'s' * (organizations > 1)} rated with no price in force: billed at"
            " nothing so far, and the invoices of their months are held from issue."
        ),
        advice=(
            "Add on-demand and reservation items with prices for every class and MIG profile"
            " (admin: Catalog items), then price the unpriced use (admin: Billing records, No"
            ' price in force, "Price the selected"): its drafts are made again and may then'
            " be issued."
        ),
        subjects=[str(use) for use in used[:SUBJECTS_SHOWN]],
    )
