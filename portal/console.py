"""What every console view shares: running a service on a form's behalf."""

from collections.abc import Callable

from django.contrib import messages
from django.core.exceptions import ValidationError

from portal.errors import DomainError, NotFound


def filters_given(query) -> dict[str, str] | None:
    """The query's parameters that have a value, for binding an API filter set to a console
    form: a filter form sends its empty fields, which the API's filters refuse as given but
    invalid (None: nothing filtered)."""
    given = {name: value for name, value in query.items() if value and name != "page"}
    return given or None


def query_without_page(query):
    """The query as page links repeat it (each adds its own page)."""
    kept = query.copy()
    kept.pop("page", None)
    return kept


# What `attempt` returns when the service refused.
REFUSED = object()


def attempt(request, form, write: Callable[[], object]):
    """Run a service; put its refusal on the form or in a message. Its result, or REFUSED."""
    try:
        return write()
    except ValidationError as error:
        if form is not None and hasattr(error, "error_dict"):
            for field, field_messages in error.message_dict.items():
                for message in field_messages:
                    form.add_error(field if field in form.fields else None, message)
        else:
            messages.error(request, " ".join(error.messages))
    except NotFound:
        raise  # the console's 404 page, as for any object the caller may not see
    except DomainError as error:
        messages.error(request, error.message)
    return REFUSED
