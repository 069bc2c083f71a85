"""What the tenancy services share: validating, applying changes, inserting against races."""

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction


def validated(instance, *, exclude: list[str] | None = None):
    """Run field validation (validators, choices, unique fields) before writing.

    Multi-column constraints are checked by each service with a message that names the field;
    the database still enforces them against races.
    """
    instance.full_clean(exclude=exclude, validate_constraints=False)
    return instance


def apply_changes(instance, **values) -> dict:
    """Set the values given (None: keep); what changed, as {field: {"from": …, "to": …}}."""
    changes = {}
    for field, value in values.items():
        if value is not None and getattr(instance, field) != value:
            changes[field] = {"from": getattr(instance, field), "to": value}
            setattr(instance, field, value)
    return changes


def insert(instance, *, field: str, message: str):
    """Save; a concurrent request that won the race on a unique key is a field error."""
    try:
        with transaction.atomic():
            instance.save()
    except IntegrityError as error:
        raise ValidationError({field: message}) from error
    return instance
