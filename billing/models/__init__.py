"""Billing's rows, one module per concern as its services are: what the portal sells and the
orders of it (commerce), what was used and its rating (metering), invoices and credit
(invoicing), the preemption contract's credits (credits), budgets. Every model is importable
from here, as migrations import them.

Money is ``Decimal`` in the catalog's currency (``PORTAL_CURRENCY``); a unit price has four
decimal places (a GPU-second priced per hour needs them), amounts on invoices are rounded half
up to cents per line.
"""

from .books import CostModel, ShowbackSetting
from .budgets import Budget, BudgetAlert, default_thresholds
from .commerce import CancellationCharge, CatalogItem, Order, PriceVersion
from .credits import ContractCredit
from .invoicing import Credit, Invoice, InvoiceCounter, InvoiceLine
from .metering import USAGE_UNRATED, BillingRecord, UsageInterval, UsageReconciliation

__all__ = [
    "USAGE_UNRATED",
    "BillingRecord",
    "Budget",
    "BudgetAlert",
    "CancellationCharge",
    "CatalogItem",
    "ContractCredit",
    "CostModel",
    "Credit",
    "Invoice",
    "InvoiceCounter",
    "InvoiceLine",
    "Order",
    "PriceVersion",
    "ShowbackSetting",
    "UsageInterval",
    "UsageReconciliation",
    "default_thresholds",
]
