"""The one way a versioned row (a price, a cost model) is added: checked, saved and audited in
one transaction; a second version from the same moment is a field error, not a 500."""

from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction

from tenants.permissions import Caller
from tenants.services import audit_record

V = TypeVar("V", bound=models.Model)


def version_add(
    *,
    caller: Caller,
    version: V,
    problems: dict[str, list[str]],
    action: str,
    payload: Callable[[V], dict],
    taken: str,
) -> V:
    """Save ``version`` and audit it as ``action`` with ``payload`` (of the cleaned version),
    unless ``problems`` or its fields say otherwise; ``taken``: what to say when there is one
    from that moment already."""
    errors = dict(problems)
    try:
        version.full_clean(validate_unique=False, validate_constraints=False)
    except ValidationError as invalid:
        errors.update(invalid.message_dict)
    if errors:
        raise ValidationError(errors)
    try:
        with transaction.atomic():
            version.save()
            audit_record(
                caller=caller,
                organization=None,
                action=action,
                target=version,
                payload=payload(version),
            )
    except IntegrityError:
        raise ValidationError({"effective_from": [taken]}) from None
    return version
