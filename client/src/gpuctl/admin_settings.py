"""`gpuctl admin gpu-classes` and `gpuctl admin tiers`: the cluster's settings the operator API
lets an operator read and change (each change audited, as admin's edit is)."""

import click

from .output import show_object
from .resources import getter, lister, operator
from .session import Session, scoped

GPU_CLASS_COLUMNS = [
    ("NAME", "name"),
    ("MEMORY GIB", "memory_gib"),
    ("PRODUCTS", "products"),
    ("MIG PROFILES", "mig_profiles"),
    ("RESOURCE", "resource_name"),
    ("SHARED RESOURCE", "shared_resource_name"),
]
TIER_COLUMNS = [
    ("NAME", "name"),
    ("VALUE", "value"),
    ("PREEMPTIBLE", "preemptible"),
    ("IDLE WARN S", "idle_warn_after_seconds"),
    ("IDLE STOP S", "idle_stop_after_seconds"),
    ("MIN RUN S", "min_run_time_seconds"),
    ("NOTICE S", "notice_seconds"),
    ("MAX EVICTIONS", "max_evictions"),
    ("CREDITS LOST WORK", "lost_work_credited"),
    ("DESCRIPTION", "description"),
]


def _changed(session: Session, path: str, changes: dict) -> None:
    """PATCH the fields given (a None is sent only where it means "none")."""
    if not changes:
        raise click.UsageError("Nothing to change: give at least one option (--help lists them).")
    show_object(session.api.patch(path, changes), session.output)


def _settings_group(name: str, help: str, rest: str, columns, *, plural: str, one: str):
    """A group with ``ls`` and ``get NAME`` of the operator API's ``rest``."""
    group = click.Group(name, help=help)
    group.add_command(
        lister("ls", f"List the {plural}.", operator(rest), columns, empty=f"No {plural}.")
    )
    group.add_command(getter("get", f"Show a {one} (by name).", operator(rest)))
    return group


gpu_classes = _settings_group(
    "gpu-classes",
    "The cluster's GPU classes: list, get, update.",
    "gpu-classes/",
    GPU_CLASS_COLUMNS,
    plural="GPU classes",
    one="GPU class",
)
tiers = _settings_group(
    "tiers",
    "The priority tiers: list, get, update.",
    "priority-tiers/",
    TIER_COLUMNS,
    plural="priority tiers",
    one="priority tier",
)


@gpu_classes.command("update")
@click.argument("name")
@click.option("--memory-gib", type=click.IntRange(1, 100_000))
@click.option("--product", "products", multiple=True, help="Replaces the list (repeat).")
@click.option("--mig-profile", "mig_profiles", multiple=True, help="Replaces the list (repeat).")
@click.option("--no-mig-profiles", is_flag=True, help="It offers no MIG profile.")
@click.option("--resource-name", help="e.g. nvidia.com/gpu")
@click.option("--shared-resource-name", help="e.g. nvidia.com/gpu.shared")
@scoped()
def gpu_class_update(session: Session, name, products, mig_profiles, no_mig_profiles, **fields):
    """Change a GPU class: only the fields given."""
    if no_mig_profiles and mig_profiles:
        raise click.UsageError("--mig-profile or --no-mig-profiles, not both.")
    changes = {field: value for field, value in fields.items() if value is not None}
    if products:
        changes["products"] = list(products)
    if mig_profiles or no_mig_profiles:
        changes["mig_profiles"] = list(mig_profiles)
    _changed(session, f"operator/gpu-classes/{name}/", changes)


def _unset_or(
    given: int | None, unset: bool, option: str, unset_flag: str
) -> tuple[bool, int | None]:
    """Whether an optional setting is changed, and to what (None: unset)."""
    if given is not None and unset:
        raise click.UsageError(f"--{option} or --{unset_flag}, not both.")
    return given is not None or unset, given


# Settings that may be unset: their option, the flag that unsets them, their API field.
_TIER_OPTIONAL = (
    ("idle-warn-after", "no-idle-warn", "idle_warn_after_seconds"),
    ("idle-stop-after", "no-idle-stop", "idle_stop_after_seconds"),
    ("min-run-time", "no-min-run-time", "min_run_time_seconds"),
    ("notice", "default-notice", "notice_seconds"),
    ("max-evictions", "no-max-evictions", "max_evictions"),
)


@tiers.command("update")
@click.argument("name")
@click.option("--value", type=click.IntRange(-1_000_000, 1_000_000), help="Higher runs first.")
@click.option("--preemptible/--not-preemptible", default=None)
@click.option("--description")
@click.option("--idle-warn-after", type=click.IntRange(60), help="Seconds idle before a warning.")
@click.option("--no-idle-warn", is_flag=True, help="Never warn an idle workload of the tier.")
@click.option("--idle-stop-after", type=click.IntRange(60), help="Seconds idle before it stops.")
@click.option("--no-idle-stop", is_flag=True, help="Never stop an idle workload of the tier.")
@click.option("--min-run-time", type=click.IntRange(1), help="Seconds before it may be preempted.")
@click.option("--no-min-run-time", is_flag=True, help="No minimum run time.")
@click.option("--notice", type=click.IntRange(0, 3600), help="Seconds from SIGTERM to SIGKILL.")
@click.option("--default-notice", is_flag=True, help="Kubernetes' default notice (30 s).")
@click.option("--max-evictions", type=click.IntRange(1), help="Evictions before it is spared.")
@click.option("--no-max-evictions", is_flag=True, help="No cap on evictions.")
@click.option(
    "--credits-lost-work/--no-lost-work-credit",
    "lost_work_credited",
    default=None,
    help="Whether its evicted work is credited the GPU-seconds it lost.",
)
@scoped()
def tier_update(session: Session, name, **fields):
    """Change a priority tier: only the fields given."""
    changes = {}
    for option, unset_flag, field in _TIER_OPTIONAL:
        given = fields.pop(option.replace("-", "_"))
        unset = fields.pop(unset_flag.replace("-", "_"))
        changed, value = _unset_or(given, unset, option, unset_flag)
        if changed:
            changes[field] = value
    changes.update({field: value for field, value in fields.items() if value is not None})
    _changed(session, f"operator/priority-tiers/{name}/", changes)


COMMANDS = [gpu_classes, tiers]
