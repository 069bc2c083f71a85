"""Every read of billing, scoped to the caller's organizations, one module per concern; the
public names are importable from here.
- catalog: what is offered at what price (the rules themselves are ``billing.pricing``'s),
  and what the cluster offers that no price covers
- orders: orders, what waits for operators, reservations' terms and cancellation charges
- invoices: invoice periods, invoices and credits, the months the beat drafts
- usage: what records come to, spend, use per day and unit, quota packages' months, unpriced
  use
- budgets: budgets with what their scope spent
- credits: the preemption contract's credits as invoice lines
- books: the operator's books: each pool's hours by category, cost, revenue, margin
- books_kept: a month's books computed once and kept until their inputs change
- showback: an organization's part of the books, as the operator shows it
"""

from ..pricing import offered_to, price_in_force
from .books import PoolBooks, books, pool_allocation, pool_capacity_spans
from .books_kept import KeptBooks, books_inputs_key, month_books, month_books_for_operator
from .budgets import budget_get, budget_list, budget_spent
from .catalog import UnpricedResource, catalog_for, resources_unpriced, usage_prices
from .credits import CreditLine, contract_credit_lines
from .invoices import (
    credit_balance,
    credit_list,
    invoice_get,
    invoice_line_usage,
    invoice_list,
    invoice_period,
    invoice_periods,
    invoices_of_month,
    months_to_draft,
    period_of,
)
from .operators import (
    cost_models_for_operator,
    credits_for_operator,
    invoice_for_operator,
    invoices_for_operator,
    orders_for_operator,
)
from .orders import (
    PendingApprovals,
    approvals_pending,
    cancellation_charge_get,
    cancellation_charge_list,
    cancellation_charge_of,
    cancellation_quote,
    order_for_operator,
    order_get,
    order_list,
    order_of_reservation,
    reservation_terms,
)
from .showback import (
    Showback,
    ShowbackOffer,
    showback,
    showback_level,
    showback_offer_for_operator,
)
from .usage import (
    LINE_KEY,
    PackageCharge,
    UnpricedUse,
    UsageSummary,
    charged,
    gpu_seconds_rated,
    package_charges,
    spend,
    usage_reconciliation_last,
    usage_summary,
    usage_unpriced,
    use_in_units,
)

__all__ = [
    "LINE_KEY",
    "CreditLine",
    "KeptBooks",
    "PackageCharge",
    "PendingApprovals",
    "PoolBooks",
    "Showback",
    "ShowbackOffer",
    "UnpricedResource",
    "UnpricedUse",
    "UsageSummary",
    "approvals_pending",
    "books",
    "books_inputs_key",
    "budget_get",
    "budget_list",
    "budget_spent",
    "cancellation_charge_get",
    "cancellation_charge_list",
    "cancellation_charge_of",
    "cancellation_quote",
    "catalog_for",
    "charged",
    "contract_credit_lines",
    "cost_models_for_operator",
    "credit_balance",
    "credit_list",
    "credits_for_operator",
    "gpu_seconds_rated",
    "invoice_for_operator",
    "invoice_get",
    "invoice_line_usage",
    "invoice_list",
    "invoice_period",
    "invoice_periods",
    "invoices_for_operator",
    "invoices_of_month",
    "month_books",
    "month_books_for_operator",
    "months_to_draft",
    "offered_to",
    "order_for_operator",
    "order_get",
    "order_list",
    "order_of_reservation",
    "orders_for_operator",
    "package_charges",
    "period_of",
    "pool_allocation",
    "pool_capacity_spans",
    "price_in_force",
    "reservation_terms",
    "resources_unpriced",
    "showback",
    "showback_level",
    "showback_offer_for_operator",
    "spend",
    "usage_prices",
    "usage_reconciliation_last",
    "usage_summary",
    "usage_unpriced",
    "use_in_units",
]
