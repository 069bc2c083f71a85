"""Issue a staff user an operator token (the operator API, `/api/v1/operator/`) from the
shell: for a first operator, or an installation whose operators script it. Admin's API tokens
page issues one too."""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from portal import clock
from portal.errors import DomainError
from tenants import services
from tenants.permissions import Caller


class Command(BaseCommand):
    help = "Issue a staff user a token of the operator API; prints its secret once."

    def add_arguments(self, parser):
        parser.add_argument("email", help="The staff user's e-mail address.")
        parser.add_argument("--name", default="operator", help="What the token is for.")
        parser.add_argument(
            "--days", type=int, default=None, help="Expires after this many days (default never)."
        )

    def handle(self, *args, email, name, days, **options):
        user = get_user_model().objects.filter(email__iexact=email, is_active=True).first()
        if user is None:
            raise CommandError(f"No active user {email}.")
        if days is not None and days < 1:
            raise CommandError("--days: at least 1.")
        expires_at = clock.wall() + timedelta(days=days) if days else None
        try:
            token, secret = services.operator_token_issue(
                caller=Caller(user=user), name=name, expires_at=expires_at
            )
        except (DomainError, ValidationError) as refused:
            raise CommandError(" ".join(getattr(refused, "messages", [str(refused)]))) from None
        self.stderr.write(f"Operator token {token.prefix}… for {user.email}; shown once:")
        self.stdout.write(secret)
