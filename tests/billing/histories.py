"""Histories the books' tests write: a node's availability spans, and random histories on one
node for the properties that lending is read the same everywhere (reservations approved in a
window, and the owner's and guests' use, minutes after ``at(0)``)."""

from datetime import datetime

from hypothesis import strategies as st

from scheduling.models import Node, NodeAvailability, Reservation

from .conftest import at, ran

# A reservation's window: when it starts and how long it lasts (minutes), and its GPUs.
WINDOW = (
    st.integers(min_value=0, max_value=120),
    st.integers(min_value=1, max_value=180),
    st.integers(min_value=1, max_value=4),
)
# Each use: whose ("owner": the reservation's project, "guest": another organization's),
# when it starts and how long it lasts (minutes), and how many GPUs.
USES = st.lists(
    st.tuples(
        st.sampled_from(["owner", "guest"]),
        st.integers(min_value=0, max_value=240),  # starts, minutes
        st.integers(min_value=1, max_value=240),  # lasts
        st.integers(min_value=1, max_value=8),  # GPUs
    ),
    max_size=6,
)


def reservation_approved(*, organization, gpu_class, pool, start, length, gpus, project=None):
    """Written as approved: the properties are the books' and the credit's, not the approval's
    capacity check."""
    return Reservation.objects.create(
        organization=organization,
        project=project,
        gpu_class=gpu_class,
        pool=pool,
        gpus=gpus,
        starts_at=at(start / 60),
        ends_at=at((start + length) / 60),
        state=Reservation.State.APPROVED,
    )


def uses_run(uses, *, owner, guest) -> None:
    """Each use as a workload of the ``owner`` or the ``guest`` project that ran its minutes."""
    for index, (who, start, length, gpus) in enumerate(uses):
        project = owner if who == "owner" else guest
        ran(project, start=start / 60, end=(start + length) / 60, gpus=gpus, name=f"u{index}")


def availability_recorded(
    node: Node, changes: list[tuple[datetime, str]], *, until: datetime | None = None
) -> list[NodeAvailability]:
    """The node's availability history replaced by ``changes`` ((moment, state), in order):
    each span ends where the next starts, the last at ``until`` (None: open), with the node's
    pool and inventory, as the inventory sync writes them."""
    NodeAvailability.objects.filter(node=node).delete()
    ends = [moment for moment, _ in changes[1:]] + [until]
    return [
        NodeAvailability.objects.create(
            node=node,
            pool=node.pool,
            state=state,
            gpu_count=node.gpu_count,
            mig_layout=node.mig_layout,
            starts_at=starts_at,
            ends_at=ends_at,
        )
        for (starts_at, state), ends_at in zip(changes, ends, strict=True)
    ]
