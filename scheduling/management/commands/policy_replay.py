"""Replay the portal's recorded GPU work under today's settings and under a proposed change,
and print both side by side (docs/operators/policy-replay.md)."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from portal import clock
from scheduling.engine import PLACEMENT_POLICIES
from scheduling.selectors.replay import (
    ReplayRefused,
    allocation_by,
    comparison_rows,
    policy_replay_run,
    report_data,
    span_parse,
)
from scheduling.selectors.replay_change import (
    ChangeError,
    change_from_options,
    change_from_yaml,
    changes_merged,
    half_life_words,
)

OPTIONS = {"since", "set_quota", "weight", "cohort", "policy", "tier", "half_life", "change"}


class Command(BaseCommand):
    help = "Replay recorded GPU work under today's settings and under a proposed change."

    def add_arguments(self, parser):
        parser.add_argument("--since", default="30d", help="how far back: 30d, 12h, 2w")
        parser.add_argument(
            "--set-quota",
            action="append",
            default=[],
            metavar="ORG:RESOURCE=GUARANTEE[:LIMIT]",
            help="an organization's quota, e.g. acme:H100-80GB=16:24 (repeatable)",
        )
        parser.add_argument(
            "--weight", action="append", default=[], metavar="ORG=WEIGHT", help="fair-share weight"
        )
        parser.add_argument(
            "--cohort",
            action="append",
            default=[],
            metavar="ORG=COHORT",
            help="the cohort all the organization's quotas join (ORG= for none)",
        )
        parser.add_argument("--policy", help=f"placement policy: {', '.join(PLACEMENT_POLICIES)}")
        parser.add_argument(
            "--tier", action="append", default=[], metavar="TIER=PRIORITY", help="a tier's value"
        )
        parser.add_argument(
            "--half-life",
            metavar="HOURS",
            help="the fair-share half-life of past usage (0: off; default: the setting's)",
        )
        parser.add_argument("--change", type=Path, help="a YAML file of the change")
        parser.add_argument("--json", action="store_true", help="one JSON document, for scripts")

    def handle(self, *args, **options):
        until = clock.now()
        try:
            change = change_from_options(
                quotas=options["set_quota"],
                weights=options["weight"],
                cohorts=options["cohort"],
                placement=options["policy"],
                tiers=options["tier"],
                half_life=options["half_life"],
            )
            if options["change"]:
                change = changes_merged(change_from_yaml(self._read(options["change"])), change)
            report = policy_replay_run(
                since=until - span_parse(options["since"]), until=until, change=change
            )
        except ChangeError as error:
            raise CommandError(f"Policy replay: {_option(error.field)}: {error.message}") from None
        except ReplayRefused as error:
            raise CommandError(f"Policy replay refused: {error}") from None
        if options["json"]:
            self.stdout.write(json.dumps(report_data(report), indent=2))
            return
        self._table(report)

    @staticmethod
    def _read(path: Path) -> str:
        try:
            return path.read_text()
        except OSError as error:
            raise ChangeError("change", f"cannot read {path}: {error.strerror}.") from None

    def _table(self, report) -> None:
        write = self.stdout.write
        write(
            f"Policy replay of {report.workloads} workloads submitted"
            f" {report.since:%Y-%m-%d %H:%M} to {report.until:%Y-%m-%d %H:%M} UTC"
        )
        write("Change: " + ("; ".join(report.change.lines()) or "none (both columns agree)"))
        current, proposed = (half_life_words(hours) for hours in report.half_life_hours)
        write(f"Fair-share half-life: {current} current, {proposed} proposed")
        recorded = ", ".join(f"{k} {v:.1f}" for k, v in sorted(report.recorded_gpu_hours.items()))
        write(f"Recorded GPU-hours: {recorded or 'none'}")
        write("")
        rows = [("", "", "current", "proposed"), *comparison_rows(report)]
        cells = [[section, what, _cell(a), _cell(b)] for section, what, a, b in rows]
        widths = [max(len(row[i]) for row in cells) for i in range(4)]
        for row in cells:
            write(
                f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}"
                f"  {row[2]:>{widths[2]}}  {row[3]:>{widths[3]}}".rstrip()
            )
        write("")
        write("Mean GPUs allocated per day (current -> proposed):")
        for gpu_class, days in allocation_by(report, hours=24).items():
            write(f"  {gpu_class}: " + "  ".join(f"{a:.1f}->{b:.1f}" for _, a, b in days))


def _option(field: str) -> str:
    """The option a change's field came from (a YAML section's: the file's)."""
    if field in OPTIONS:
        return "--" + field.replace("_", "-")
    return f"--change ({field})"


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)
