"""Query filters the apps' filter sets share, and the API's ordering. What a parameter may be
is what the schema says; a parameter sent empty is not one left out: it must be valid too."""

import re
from datetime import UTC, datetime

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.utils.dateparse import parse_datetime
from django_filters.fields import ChoiceField, IsoDateTimeField
from rest_framework import exceptions, filters


class UtcIsoDateTimeField(IsoDateTimeField):
    """An ISO 8601 instant with its UTC offset (any Python reads, ±23:59), turned into UTC
    before it reaches the database: PostgreSQL refuses offsets past ±15:59. Without an offset
    (or a date alone) it is a 400, as in request bodies: the server does not guess the zone."""

    default_error_messages = {
        "naive": "A date and time with its UTC offset, such as 2026-11-30T09:00Z.",
    }

    def to_python(self, value):
        if value == "":  # sent without a value: not an instant (absent, it filters nothing)
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        if isinstance(value, str):
            try:
                parsed = parse_datetime(value.strip())
            except ValueError:
                parsed = None  # the parent's parse says it is not an instant
            if parsed is not None and parsed.tzinfo is None:
                raise ValidationError(self.error_messages["naive"], code="naive")
        instant = super().to_python(value)
        if instant is None:
            return None
        try:
            return instant.astimezone(UTC)
        except OverflowError:  # before year 1 or after 9999 once in UTC: the first or last instant
            return (datetime.min if instant.year == 1 else datetime.max).replace(tzinfo=UTC)


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


class StrictDateField(forms.DateField):
    """A date, `2026-11-01`; sent empty, a 400 (absent, it filters nothing)."""

    def to_python(self, value):
        if value == "":
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


class DateFilter(django_filters.DateFilter):
    field_class = StrictDateField


class EnumField(ChoiceField):
    def clean(self, value):
        if value == "":
            raise ValidationError(
                self.error_messages["invalid_choice"], code="invalid_choice", params={"value": ""}
            )
        by_case = {str(choice).casefold(): choice for choice, _ in self.choices}
        return super().clean(by_case.get(str(value).casefold(), value))


class EnumFilter(django_filters.ChoiceFilter):
    """One of `choices`, in any case (`running` is `Running`); sent empty, a 400 like any
    other value that is not one."""

    field_class = EnumField

    def __init__(self, *args, **kwargs):
        # In a console form, the choice of no filter ("any" sends nothing: see
        # portal.console.filters_given).
        kwargs.setdefault("empty_label", "any")
        super().__init__(*args, **kwargs)


class OrderingFilter(filters.OrderingFilter):
    """`ordering`: the view's `ordering_fields`, each "-" first for descending, separated by
    commas. Anything else is a 400 naming it, not silently ignored (nor, without
    `ordering_fields`, DRF's ImproperlyConfigured)."""

    def _fields(self, view) -> list[str]:
        return [
            field if isinstance(field, str) else field[0]
            for field in getattr(view, "ordering_fields", None) or ()
        ]

    def get_ordering(self, request, queryset, view):
        sent = request.query_params.get(self.ordering_param)
        if sent is None:
            return self.get_default_ordering(view)
        fields = self._fields(view)
        terms = sent.split(",")
        if not fields or any(term.removeprefix("-") not in fields for term in terms):
            raise exceptions.ValidationError(
                {
                    self.ordering_param: [
                        f"Fields to order by, separated by commas, each - first for descending:"
                        f" {', '.join(fields) or 'none here'}."
                    ]
                }
            )
        return terms

    def get_schema_operation_parameters(self, view):
        field = "|".join(re.escape(name) for name in self._fields(view))
        return [
            {
                "name": self.ordering_param,
                "required": False,
                "in": "query",
                "description": "Fields to order by, separated by commas, each - first for"
                " descending.",
                "schema": {"type": "string", "pattern": f"^-?({field})(,-?({field}))*$"},
            }
        ]
