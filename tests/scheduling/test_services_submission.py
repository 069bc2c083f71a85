import dataclasses
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from portal import events
from portal.errors import Conflict
from portal.events import ExtensionPoint
from scheduling import services
from scheduling.models import GpuClass, QuotaGrant, Workload
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db


def fields_of(error: ValidationError) -> set[str]:
    return set(error.message_dict)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"gpus": 0}, "gpus"),
        ({"gpu_classes": ("TPU-v5",)}, "gpu_classes"),
        ({"tier": "platinum"}, "tier"),
        ({"gpus": 8, "replicas": 9}, "gpus"),
        ({"gpus": 9}, "gpus"),
        ({"gpus": 1, "gpu_milli": 500}, "gpus"),
        (
            {
                "gpus": 0,
                "mig_profile": "mig-2g.20gb",
                "mig_count": 1,
                "gpu_classes": ("A100-80GB",),
            },
            "mig_profile",
        ),
        ({"required_topology": "galaxy"}, "required_topology"),
        ({"image": ""}, "image"),
    ],
)
def test_an_impossible_request_is_refused_naming_the_field(submit, overrides, field):
    with pytest.raises(ValidationError) as error:
        submit(**overrides)
    assert field in fields_of(error.value)
    assert not Workload.objects.exists()


def test_a_request_beyond_the_quota_limit_names_the_limit(submit):
    with pytest.raises(ValidationError) as error:
        submit(gpus=8, replicas=9)
    assert "64" in error.value.message_dict["gpus"][0]


def test_a_second_workload_with_the_same_name_is_refused(submit):
    submit(name="twice")
    with pytest.raises(ValidationError) as error:
        submit(name="twice")
    assert fields_of(error.value) == {"name"}


def test_a_viewer_cannot_submit(submit, vic):
    with pytest.raises(PermissionDenied):
        submit(user=vic)


def test_a_submission_records_its_submitter_and_tier(submit, mia):
    workload = submit(max_runtime=timedelta(hours=1))
    assert (workload.submitted_by, workload.tier.name, workload.preemptible) == (
        mia,
        "training",
        True,
    )
    assert workload.events.get().kind == "submitted"


def test_a_fractional_gpu_request_is_accepted(submit, cycle):
    workload = submit(kind="inference", gpus=0, gpu_milli=250, gpu_classes=("L4",))
    cycle()
    workload.refresh_from_db()
    placement = workload.placements.get()
    assert (workload.state, placement.gpu_milli, len(placement.gpu_indices)) == ("Admitted", 250, 1)


def test_mig_instances_without_a_grant_for_their_profile_are_refused_on_mig_count(submit):
    QuotaGrant.objects.filter(resource="mig", mig_profile="mig-3g.40gb").delete()
    with pytest.raises(ValidationError) as refused:
        submit(gpus=0, gpu_classes=("A100-80GB",), mig_profile="mig-3g.40gb", mig_count=1)
    assert refused.value.message_dict == {
        "mig_count": ["1 instance asked, over the quota limit of acme (A100-80GB mig-3g.40gb: 0)."]
    }


def test_a_mig_quota_must_name_a_profile_of_its_class(acme, cluster):
    grant = QuotaGrant(
        organization=acme,
        gpu_class=GpuClass.objects.get(name="L4"),
        resource="mig",
        mig_profile="mig-1g.10gb",
        guarantee=1,
        limit=1,
    )
    with pytest.raises(ValidationError) as refused:
        grant.full_clean()
    assert list(refused.value.message_dict) == ["mig_profile"]


def test_a_check_registered_for_submissions_can_refuse_one_and_nothing_is_saved(
    submit, monkeypatch
):
    def over_budget(*, caller, project, workloads):
        raise Conflict(f"{project.slug} is over its budget.", code="budget_exceeded")

    monkeypatch.setitem(events._checks, ExtensionPoint.WORKLOAD_SUBMISSION, [over_budget])
    with pytest.raises(Conflict) as error:
        submit(name="spendy")
    assert error.value.code == "budget_exceeded"
    assert not Workload.objects.filter(name="spendy").exists()


def _array(cluster, mia, ai_dev, *names: str, **fields) -> list[Workload]:
    services.project_provision(project_id=ai_dev.pk, backend=cluster)
    request = services.WorkloadRequest(
        name="",
        kind="training",
        tier="training",
        image="nvcr.io/nvidia/pytorch:25.01-py3",
        gpu_classes=("H100-80GB",),
        gpus=1,
        env={"SWEEP": "lr"},
        **fields,
    )
    return services.workloads_submit(
        caller=Caller(user=mia),
        project=ai_dev,
        requests=[dataclasses.replace(request, name=name) for name in names],
    )


def test_members_of_a_job_array_are_stored_each_with_its_own_id_and_the_shared_request(
    cluster, quotas, mia, ai_dev
):
    _array(cluster, mia, ai_dev, "sweep-1", "sweep-2", "sweep-3")
    stored = Workload.objects.order_by("name").values_list("name", "gpus", "env", "submitted_by")
    assert list(stored) == [(f"sweep-{n}", 1, {"SWEEP": "lr"}, mia.pk) for n in (1, 2, 3)]


def test_a_job_arrays_members_share_no_list_or_mapping(cluster, quotas, mia, ai_dev):
    first, second = _array(cluster, mia, ai_dev, "sweep-1", "sweep-2")
    first.env["SWEEP"], first.command.append("--more"), first.gpu_classes.clear()
    assert (second.env, second.command, second.gpu_classes) == ({"SWEEP": "lr"}, [], ["H100-80GB"])
