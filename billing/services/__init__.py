"""Every write of billing, one module per concern; the public names are importable from here.
- catalog: what the catalog offers, to whom, and its prices
- commerce: orders through the approval workflow to their fulfilment, cancellation charges
- metering: usage intervals from placements, reconciled with what was billed
- partitions: the metering tables' monthly partitions on PostgreSQL, made ahead of time
- rating: intervals and reserved capacity rated into billing records; unpriced use priced
- credits: the preemption contract's credits, for lost work and for lent reservations
- drafting: monthly invoice drafts from the records, charges and packages
- invoicing: invoices issued, paid, voided, credited; credit granted
- budgets: monthly limits, their alerts and their hard stop
- books: the operator's cost models, and what each organization is shown of its showback
"""

from .books import cost_model_add, cost_model_problems, showback_level_set
from .budgets import (
    budget_alert_email_send,
    budget_delete,
    budget_pending_hold,
    budget_save,
    budget_submission_check,
    budgets_check,
)
from .catalog import catalog_item_save, price_version_add, price_version_problems
from .commerce import (
    OrderRequest,
    billing_reconcile,
    cancellation_charge_record,
    order_approve,
    order_cancel,
    order_create,
    order_email_send,
    order_fulfil,
    order_fulfil_retry,
    order_reject,
    order_submit,
)
from .credits import contract_credits_compute
from .drafting import invoice_draft, invoices_draft_month, invoices_draft_recent
from .invoicing import (
    credit_grant,
    credit_note_issue,
    invoice_issue,
    invoice_mark_paid,
    invoice_void,
)
from .metering import usage_intervals_sync, usage_reconcile
from .partitions import metering_partitions_ensure
from .rating import usage_meter, usage_rate, usage_unpriced_price

__all__ = [
    "OrderRequest",
    "billing_reconcile",
    "budget_alert_email_send",
    "budget_delete",
    "budget_pending_hold",
    "budget_save",
    "budget_submission_check",
    "budgets_check",
    "cancellation_charge_record",
    "catalog_item_save",
    "contract_credits_compute",
    "cost_model_add",
    "cost_model_problems",
    "credit_grant",
    "credit_note_issue",
    "invoice_draft",
    "invoice_issue",
    "invoice_mark_paid",
    "invoice_void",
    "invoices_draft_month",
    "invoices_draft_recent",
    "metering_partitions_ensure",
    "order_approve",
    "order_cancel",
    "order_create",
    "order_email_send",
    "order_fulfil",
    "order_fulfil_retry",
    "order_reject",
    "order_submit",
    "price_version_add",
    "price_version_problems",
    "showback_level_set",
    "usage_intervals_sync",
    "usage_meter",
    "usage_rate",
    "usage_reconcile",
    "usage_unpriced_price",
]
