import json
from datetime import UTC

from django.utils.dateparse import parse_datetime
from rest_framework import serializers
from rest_framework.fields import SkipField, empty

from portal.bounds import FIRST_YEAR, LAST_YEAR, year_in_range


def _type_error(field: serializers.Field, value) -> str | None:
    """Why `value` is not of the JSON type that `field` declares, if it is not.

    DRF coerces: its string fields take 5 as "5", its integer fields "5" and 5.0 as 5, its
    boolean fields "yes" and 1 as true. The schema says "string", "integer" or "boolean", so
    the API takes exactly that.
    """
    if value is None:
        return None  # the field's own allow_null decides
    if isinstance(field, serializers.CharField) and not isinstance(value, str):
        return "Not a valid string."
    if isinstance(field, serializers.IntegerField) and (
        isinstance(value, bool) or not isinstance(value, int)
    ):
        return "A valid integer is required."
    if isinstance(field, serializers.BooleanField) and not isinstance(value, bool):
        return "Must be true or false."
    if isinstance(field, serializers.ListField) and isinstance(value, list):
        items = ((f"Item {index}", item) for index, item in enumerate(value))
    elif isinstance(field, serializers.DictField) and isinstance(value, dict):
        items = value.items()
    else:
        return None
    for where, item in items:
        error = _type_error(field.child, item)
        if error:
            return f"{where}: {error}"
    return None


def _untrimmed(field: serializers.Field) -> None:
    """DRF trims strings before it checks them against maxLength and patterns, so " acme" would
    pass as a slug although the schema's pattern refuses it: strings are taken as sent."""
    if isinstance(field, serializers.CharField):
        field.trim_whitespace = False
    if isinstance(field, serializers.ListField | serializers.DictField):
        _untrimmed(field.child)


class InputSerializer(serializers.Serializer):
    """Request bodies: unknown fields are an error, so a misspelt field never passes silently;
    every value must have the JSON type its field declares, strings are not trimmed."""

    def get_fields(self):
        fields = super().get_fields()
        for field in fields.values():
            _untrimmed(field)
        return fields

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {name: ["Unknown field."] for name in unknown}, code="unknown_field"
                )
            wrong = {
                name: [error]
                for name, field in self.fields.items()
                if name in data and (error := _type_error(field, data[name]))
            }
            if wrong:
                raise serializers.ValidationError(wrong, code="invalid")
        return super().to_internal_value(data)


class AlikeItemsListSerializer(serializers.ListSerializer):
    """A list of items alike but for a few fields, the child's ``alike_but_for`` (a job
    array's members differ by their names): the rest of each distinct item is validated once,
    those fields each on their own. An item whose own fields fail is validated whole, so that
    its errors are exactly those it would have alone. For a child whose checks look at those
    fields only through their own field (no ``validate()`` reading them with the rest)."""

    def to_internal_value(self, data):
        self._alike: dict[str, dict] = {}  # the validated rest of each distinct item, by its JSON
        return super().to_internal_value(data)

    def run_child_validation(self, data):
        varying = self.child.alike_but_for
        if not isinstance(data, dict):
            return super().run_child_validation(data)
        key = json.dumps({k: v for k, v in data.items() if k not in varying}, sort_keys=True)
        rest = self._alike.get(key)
        if rest is not None:
            own = self._own_values(data)
            if own is not None:
                return {**rest, **own}
        validated = super().run_child_validation(data)
        self._alike.setdefault(key, {k: v for k, v in validated.items() if k not in varying})
        return validated

    def _own_values(self, data: dict) -> dict | None:
        """The item's own fields validated, or None where one fails."""
        own = {}
        for name in self.child.alike_but_for:
            field = self.child.fields[name]
            value = data.get(name, empty)
            if value is not empty and _type_error(field, value):
                return None
            try:
                own[name] = field.run_validation(value)
            except SkipField:
                continue
            except serializers.ValidationError:
                return None
        return own


class AwareDateTimeField(serializers.DateTimeField):
    """An instant in a request: ISO 8601 with an explicit UTC offset (`Z` or `±hh:mm`), as the
    schema's `date-time` says, in the years FIRST_YEAR to LAST_YEAR; taken in UTC. A time
    without an offset, or a date alone, is a 400: which zone it meant is not for the server to
    guess."""

    default_error_messages = {
        "naive": "A date and time with its UTC offset, such as 2026-06-01T09:00:00Z.",
        "range": f"A time in the years {FIRST_YEAR} to {LAST_YEAR}.",
    }

    def to_internal_value(self, value):
        if isinstance(value, str):
            try:
                parsed = parse_datetime(value)
            except ValueError:
                parsed = None  # DRF's own parse says it is not a time
            if parsed is not None and parsed.tzinfo is None:
                self.fail("naive")
        instant = super().to_internal_value(value)
        if not year_in_range(instant.year):
            self.fail("range")
        return instant.astimezone(UTC)


class ReasonInput(InputSerializer):
    """The body of a decision that says why (a rejection, a void): its reason, kept in the
    audit trail and told to the tenant."""

    reason = serializers.CharField(max_length=500)
