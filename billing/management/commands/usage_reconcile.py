"""Compare the GPU-seconds placements held with those billed, per organization and resource,
over whole UTC days (yesterday by default); exit 1 when any differs."""

from datetime import UTC, date, datetime, timedelta

from django.core.management.base import BaseCommand, CommandError

from billing import services
from portal import clock


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser) -> None:
        parser.add_argument("--from", dest="first", type=date.fromisoformat, help="YYYY-MM-DD")
        parser.add_argument(
            "--to", dest="last", type=date.fromisoformat, help="YYYY-MM-DD, included"
        )

    def handle(self, *args, first: date | None, last: date | None, **options) -> None:
        yesterday = clock.now().date() - timedelta(days=1)
        first, last = first or yesterday, last or first or yesterday
        if last < first:
            raise CommandError("--to comes before --from.")
        services.usage_meter()
        result = services.usage_reconcile(
            starts_at=datetime(first.year, first.month, first.day, tzinfo=UTC),
            ends_at=datetime(last.year, last.month, last.day, tzinfo=UTC) + timedelta(days=1),
        )
        self.stdout.write(
            f"{first} to {last}: {result.organizations} organizations,"
            f" {result.placed_seconds} placed and {result.billed_seconds} billed seconds."
        )
        for difference in result.differences:
            self.stdout.write(
                f"  {difference['organization']} {difference['resource']}:"
                f" placed {difference['placed_seconds']}, billed {difference['billed_seconds']}"
            )
        if result.differences:
            raise CommandError(f"{len(result.differences)} differences.")
