"""What every console view shares: running a service on a form's behalf."""

from collections.abc import Callable

from django.contrib import messages
from django.core.exceptions import ValidationError

from portal.errors import DomainError, NotFound

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
