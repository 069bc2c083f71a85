from datetime import timedelta

import pytest

from portal import clock
from portal.templatetags.console import duration, start_range
from scheduling import selectors, services
from scheduling.api.serializers import WorkloadSubmitInput
from scheduling.forms import WorkloadSubmitForm
from scheduling.models import GpuClass, QuotaGrant, QuotaRequest, Reservation, Workload
from tenants.permissions import Caller

pytestmark = pytest.mark.django_db

PAGE = "/orgs/acme/projects/ai-dev/workloads/"
FORM = {
    "name": "train-1",
    "kind": "training",
    "tier": "training",
    "image": "pytorch:latest",
    "command": "torchrun --nproc-per-node=8 'train file.py'",
    "gpu_class": "H100-80GB",
    "fallback_gpu_class": "A100-80GB",
    "gpus": "8",
    "gpu_milli": "0",
    "mig_count": "0",
    "replicas": "2",
    "cpu_milli": "8000",
    "memory_mib": "32768",
    "max_runtime_minutes": "60",
    "env": "EPOCHS=3\nLR=0.1",
    "requeue_on_eviction": "on",
}


def test_a_member_submits_a_workload_from_the_console(signed_in, mia):
    response = signed_in(mia).post(PAGE, FORM)
    workload = Workload.objects.get(name="train-1")
    assert response.url == f"{PAGE}train-1/"
    assert workload.command == ["torchrun", "--nproc-per-node=8", "train file.py"]
    assert (workload.gpu_classes, workload.env) == (
        ["H100-80GB", "A100-80GB"],
        {"EPOCHS": "3", "LR": "0.1"},
    )


def test_a_request_beyond_the_quota_shows_the_error_on_the_form(signed_in, mia):
    response = signed_in(mia).post(PAGE, {**FORM, "replicas": "9", "fallback_gpu_class": ""})
    assert response.status_code == 200
    assert "quota limit" in " ".join(response.context["form"].errors["gpus"])
    assert not Workload.objects.exists()


def test_an_image_that_is_not_an_oci_reference_shows_the_error_on_the_form(signed_in, mia):
    response = signed_in(mia).post(PAGE, {**FORM, "image": "my image:latest"})
    assert response.status_code == 200
    assert "OCI image reference" in response.context["form"].errors["image"][0]
    assert not Workload.objects.exists()


def test_an_environment_over_its_limits_shows_the_error_on_the_form(signed_in, mia):
    env = "\n".join(f"V{n}=1" for n in range(129))
    response = signed_in(mia).post(PAGE, {**FORM, "env": env})
    assert response.context["form"].errors["env"] == ["129 variables; at most 128."]
    assert not Workload.objects.exists()


def test_a_viewer_sees_workloads_but_no_submit_form(signed_in, vic, submit):
    submit(name="train-1")
    page = signed_in(vic).get(PAGE).content.decode()
    assert "train-1" in page
    assert "Submit a workload" not in page


def test_the_workloads_page_shows_each_quota_in_its_unit_with_what_is_in_use(
    signed_in, mia, submit, cycle
):
    submit(name="shard", gpu_classes=("A100-80GB",), gpus=0, mig_profile="mig-1g.10gb", mig_count=3)
    cycle()
    page = signed_in(mia).get(PAGE).content.decode()
    assert (
        "<td>A100-80GB mig-1g.10gb</td><td>organization</td><td>56 instances</td>"
        "<td>56 instances</td><td>3 instances</td>"
    ) in page


def test_the_detail_page_says_why_a_workload_waits(signed_in, mia, submit, cycle):
    submit(name="big", gpus=8, replicas=8)
    submit(name="next")
    cycle()
    page = signed_in(mia).get(f"{PAGE}next/").content.decode()
    assert "Waiting:" in page
    assert Workload.objects.get(name="next").pending_message[:30] in page


def test_the_detail_page_gives_the_estimated_start_as_a_range(signed_in, mia, submit, cycle):
    submit(name="big", gpus=8, replicas=8, max_runtime=timedelta(hours=2))
    submit(name="next", gpus=8)
    cycle()
    waiting = Workload.objects.get(name="next")
    Workload.objects.filter(pk=waiting.pk).update(
        estimated_start_low=waiting.estimated_start - timedelta(minutes=50),
        estimated_start_high=waiting.estimated_start + timedelta(hours=3),
    )
    page = signed_in(mia).get(f"{PAGE}next/").content.decode()
    assert (
        start_range(
            waiting.estimated_start,
            waiting.estimated_start - timedelta(minutes=50),
            waiting.estimated_start + timedelta(hours=3),
        )
        in page
    )


def test_the_detail_page_says_work_on_borrowed_capacity_may_be_reclaimed(
    signed_in, mia, submit, cycle
):
    submit(name="lent")
    cycle()
    Workload.objects.filter(name="lent").update(borrowed=True)
    page = signed_in(mia).get(f"{PAGE}lent/").content.decode()
    assert "Running on borrowed capacity: may be reclaimed" in page


def test_the_submitter_cancels_from_the_detail_page(signed_in, mia, submit):
    submit(name="train-1")
    signed_in(mia).post(f"{PAGE}train-1/cancel/")
    assert Workload.objects.get(name="train-1").state == "Cancelled"


def test_another_tenant_gets_a_404_for_the_workload_pages(signed_in, bruno, submit):
    submit(name="train-1")
    assert signed_in(bruno).get(f"{PAGE}train-1/").status_code == 404


def test_the_form_offers_requeue_on_eviction_checked(signed_in, mia):
    page = signed_in(mia).get(PAGE).content.decode()
    assert 'name="requeue_on_eviction" id="id_requeue_on_eviction" checked' in page


def test_a_member_opts_out_of_requeue_from_the_console(signed_in, mia):
    form = {key: value for key, value in FORM.items() if key != "requeue_on_eviction"}
    signed_in(mia).post(PAGE, form)
    assert Workload.objects.get(name="train-1").requeue_on_eviction is False


RESERVATIONS = "/orgs/acme/reservations/"


def test_an_owner_reserves_from_the_console(signed_in, alice, cluster):
    start = (clock.now() + timedelta(days=2)).strftime("%Y-%m-%dT%H:00")
    response = signed_in(alice).post(
        RESERVATIONS,
        {
            "gpu_class": "H100-80GB",
            "pool": "",
            "gpus": 8,
            "starts_at": start,
            "hours": 4,
            "weeks": 1,
            "project": "",
        },
    )
    assert (response.status_code, Reservation.objects.get().gpus) == (302, 8)


def test_an_owner_reserves_mig_instances_from_the_console(signed_in, alice, cluster):
    start = (clock.now() + timedelta(days=2)).strftime("%Y-%m-%dT%H:00")
    signed_in(alice).post(
        RESERVATIONS,
        {
            "gpu_class": "A100-80GB",
            "pool": "a100-mig",
            "mig_profile": "mig-1g.10gb",
            "gpus": 14,
            "starts_at": start,
            "hours": 4,
            "weeks": 1,
            "project": "",
        },
    )
    held = Reservation.objects.get()
    assert (held.gpus, held.mig_profile) == (14, "mig-1g.10gb")


def test_the_reservation_page_shows_a_refusal_on_the_form(signed_in, alice, cluster):
    start = (clock.now() + timedelta(days=2)).strftime("%Y-%m-%dT%H:00")
    page = (
        signed_in(alice)
        .post(
            RESERVATIONS,
            {
                "gpu_class": "H100-80GB",
                "pool": "",
                "gpus": 65,
                "starts_at": start,
                "hours": 4,
                "weeks": 1,
                "project": "",
            },
        )
        .content.decode()
    )
    assert "65 GPUs, but the largest pool of H100-80GB has 64." in page


def test_a_viewer_sees_the_timeline_but_no_reservation_form(signed_in, vic, cluster):
    page = signed_in(vic).get(RESERVATIONS).content.decode()
    assert ("dgx-h100" in page, "Reserve GPUs" in page) == (True, False)


def test_another_tenant_gets_a_404_for_the_reservation_page(signed_in, bruno, cluster):
    assert signed_in(bruno).get(RESERVATIONS).status_code == 404


QUOTAS = "/orgs/acme/quotas/"


def test_an_owner_asks_for_more_quota_from_the_console(signed_in, alice, quotas):
    response = signed_in(alice).post(
        QUOTAS,
        {
            "gpu_class": "A100-80GB",
            "resource": "mig",
            "mig_profile": "mig-1g.10gb",
            "amount": 7,
            "reason": "Notebooks for the course",
            "until": "",
            "project": "",
        },
    )
    assert (response.status_code, QuotaRequest.objects.get().amount) == (302, 7)


def test_the_quota_page_shows_a_refusal_on_the_field(signed_in, alice, quotas):
    page = (
        signed_in(alice)
        .post(
            QUOTAS,
            {
                "gpu_class": "L4",
                "resource": "mig",
                "mig_profile": "mig-1g.10gb",
                "amount": 1,
                "reason": "x",
            },
        )
        .content.decode()
    )
    assert "One of the class&#x27;s MIG profiles" in page


def test_a_viewer_sees_the_quotas_but_cannot_ask(signed_in, vic, quotas):
    page = signed_in(vic).get(QUOTAS).content.decode()
    assert ("A100-80GB mig-1g.10gb" in page, "Ask for more quota" in page) == (True, False)


def test_another_tenant_gets_a_404_for_the_quota_page(signed_in, bruno, quotas):
    assert signed_in(bruno).get(QUOTAS).status_code == 404


def test_the_quota_page_shows_what_is_borrowed_and_what_could_be_borrowed_now(
    signed_in, alice, globex, submit, cycle
):
    # acme: 32 guaranteed, 48 at most; globex guaranteed 24 of the 64 H100s: 8 no guarantee
    # covers. acme runs 36: 4 borrowed, 4 more to borrow.
    QuotaGrant.objects.filter(
        organization__slug="acme", gpu_class__name="H100-80GB", resource="gpus"
    ).update(guarantee=32, limit=48)
    QuotaGrant.objects.create(
        organization=globex,
        gpu_class=GpuClass.objects.get(name="H100-80GB"),
        resource="gpus",
        guarantee=24,
        limit=24,
    )
    submit(name="big", gpus=4, replicas=9)
    cycle()
    page = signed_in(alice).get("/orgs/acme/quotas/").content.decode()
    assert (
        "<td>H100-80GB</td><td>organization</td><td>32 GPUs</td><td>48 GPUs</td>"
        "<td>36 GPUs</td><td>4 GPUs</td><td>4 GPUs</td>"
    ) in page


def opened_form(user, organization) -> WorkloadSubmitForm:
    """The submit form as the workloads page opens it for ``user``."""
    return WorkloadSubmitForm(
        tiers=selectors.tier_list(),
        gpu_classes=selectors.gpu_class_list(),
        granted=selectors.quota_class_most_granted(
            caller=Caller(user=user), organization=organization
        ),
    )


def test_the_submit_form_as_it_opens_submits_with_a_name_and_an_image(signed_in, mia, acme):
    form = opened_form(mia, acme)
    opened = {
        name: field.initial for name, field in form.fields.items() if field.initial is not None
    }
    response = signed_in(mia).post(
        PAGE, {**opened, "name": "first", "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
    )
    workload = Workload.objects.get(name="first")
    assert (response.status_code, workload.gpu_classes, workload.gpus) == (
        302,
        [opened["gpu_class"]],
        1,
    )


def test_the_submit_form_and_the_api_default_to_the_same_cpu_and_memory(mia, acme):
    form = opened_form(mia, acme)
    api = WorkloadSubmitInput()
    assert (form.fields["cpu_milli"].initial, form.fields["memory_mib"].initial) == (
        api.fields["cpu_milli"].default,
        api.fields["memory_mib"].default,
    )


def test_the_submit_form_offers_mig_profiles_as_a_list(mia, acme, quotas):
    choices = dict(opened_form(mia, acme).fields["mig_profile"].choices)
    assert "mig-1g.10gb" in choices


def test_the_submit_form_refuses_an_image_that_is_no_oci_reference(signed_in, mia):
    response = signed_in(mia).post(PAGE, {**FORM, "image": "Not An Image!"})
    assert (response.status_code, "image" in response.context["form"].errors) == (200, True)


def test_the_workloads_table_refreshes_alone(signed_in, mia, submit):
    submit(name="queued")
    page = signed_in(mia).get(PAGE, headers={"HX-Request": "true"}).content.decode()
    assert ("queued" in page, "<html" in page, "Submit a workload" in page) == (True, False, False)


def test_a_workloads_live_part_refreshes_alone_until_it_ends(signed_in, mia, submit):
    submit(name="queued")
    client = signed_in(mia)
    live = client.get(f"{PAGE}queued/", headers={"HX-Request": "true"}).content.decode()
    Workload.objects.filter(name="queued").update(state=Workload.State.SUCCEEDED)
    ended = client.get(f"{PAGE}queued/", headers={"HX-Request": "true"}).content.decode()
    assert ("<html" in live, 'hx-trigger="every 5s"' in live, "hx-trigger" in ended) == (
        False,
        True,
        False,
    )


def test_htmx_comes_from_the_portals_static_files(signed_in, mia):
    page = signed_in(mia).get(PAGE).content.decode()
    assert '<script src="/static/django_htmx/htmx-2.min.js"' in page


def test_the_workloads_page_filters_by_state_in_any_case(signed_in, mia, submit):
    submit(name="queued")
    submit(name="done")
    Workload.objects.filter(name="done").update(state=Workload.State.SUCCEEDED)
    page = signed_in(mia).get(PAGE, {"state": "succeeded"}).content.decode()
    assert ("queued/" in page, "done/" in page) == (False, True)


def test_the_workloads_page_filters_by_kind_and_name_as_the_api_does(signed_in, mia, submit):
    submit(name="train-a")
    submit(name="train-b", kind="batch-inference", tier="batch")
    submit(name="eval-a", kind="batch-inference", tier="batch")
    page = signed_in(mia).get(PAGE, {"kind": "BATCH-INFERENCE", "name": "train"}).content.decode()
    assert ("train-a/" in page, "train-b/" in page, "eval-a/" in page) == (False, True, False)


def test_the_filter_form_sent_with_empty_fields_filters_nothing(signed_in, mia, submit):
    submit(name="queued")
    page = signed_in(mia).get(PAGE, {"state": "", "kind": "", "tier": "", "name": ""})
    assert "queued/" in page.content.decode()


def test_an_unknown_state_is_explained_and_lists_nothing(signed_in, mia, submit):
    submit(name="queued")
    page = signed_in(mia).get(PAGE, {"state": "sleeping"}).content.decode()
    assert ("queued/" in page, "No workload matches these filters." in page) == (False, True)


def test_page_links_keep_the_filters(signed_in, mia, submit):
    for n in range(51):
        submit(name=f"w{n:02d}")
    page = signed_in(mia).get(PAGE, {"state": "pending"}).content.decode()
    assert 'href="?state=pending&amp;page=2"' in page


def test_the_workloads_page_pages_fifty_at_a_time(signed_in, mia, submit):
    for n in range(51):
        submit(name=f"w{n:02d}")
    first = signed_in(mia).get(PAGE).content.decode()
    second = signed_in(mia).get(PAGE, {"page": "2"}).content.decode()
    assert ("page 1 of 2 (51 workloads)" in first, second.count("workloads/w")) == (True, 1)


def running_for(submit, cycle, advance, *, max_runtime: timedelta, seconds: int) -> Workload:
    """A one-GPU workload with ``max_runtime``, running ``seconds`` after it is admitted."""
    workload = submit(
        name="timed",
        gpus=1,
        max_runtime=max_runtime,
        env={"SIMULATED_RUNTIME_SECONDS": str(int(max_runtime.total_seconds()))},
    )
    cycle()
    advance(seconds=seconds)
    return Workload.objects.get(pk=workload.pk)


def test_the_detail_page_shows_how_long_a_workload_ran_and_has_left(
    signed_in, mia, submit, cycle, advance
):
    workload = running_for(submit, cycle, advance, max_runtime=timedelta(hours=2), seconds=1_800)
    assert workload.state == "Running"
    page = signed_in(mia).get(f"{PAGE}timed/").content.decode()
    elapsed = duration(clock.now() - workload.started_at)
    remaining = duration(workload.expected_end - clock.now())
    assert f"<dt>Running for</dt><dd>{elapsed}</dd>" in page
    assert f"<dt>Remaining</dt><dd>{remaining} until its maximum runtime" in page


def test_the_detail_page_shows_how_long_a_pending_workload_has_waited(
    signed_in, mia, submit, cycle
):
    submit(name="big", gpus=8, replicas=8)
    submit(name="next")
    cycle()
    clock.advance(seconds=3 * 3_600 + 5 * 60)
    page = signed_in(mia).get(f"{PAGE}next/").content.decode()
    assert "<dt>Waiting for</dt><dd>3 h 05 min</dd>" in page


def test_a_workloads_clock_stops_when_it_ends(submit, cycle, advance):
    workload = running_for(submit, cycle, advance, max_runtime=timedelta(hours=1), seconds=600)
    services.workload_cancel(caller=Caller(user=workload.submitted_by), workload=workload)
    workload.refresh_from_db()
    later = selectors.workload_clock(workload, now=clock.now() + timedelta(days=1))
    assert later.elapsed == workload.finished_at - workload.started_at
    assert later.remaining is None


def test_the_quota_page_shows_borrowing_as_unknown_before_the_first_cycle(signed_in, alice, quotas):
    page = signed_in(alice).get("/orgs/acme/quotas/").content.decode()
    assert "<td>64 GPUs</td><td>0 GPUs</td><td>—</td><td>—</td>" in page


def test_a_reservation_at_the_end_of_year_9999_is_refused_on_the_form(signed_in, alice, cluster):
    response = signed_in(alice).post(
        RESERVATIONS,
        {
            "gpu_class": "H100-80GB",
            "pool": "",
            "gpus": 8,
            "starts_at": "9999-12-31T23:00",
            "hours": 4,
            "weeks": 1,
            "project": "",
        },
    )
    assert (response.status_code, "At most 5 years ahead." in response.content.decode()) == (
        200,
        True,
    )


def test_a_weekly_series_that_would_overbook_the_pool_is_refused_in_the_console(
    signed_in, alice, cluster
):
    start = (clock.now() + timedelta(days=2)).strftime("%Y-%m-%dT%H:00")
    response = signed_in(alice).post(
        RESERVATIONS,
        {
            "gpu_class": "L4",
            "pool": "l4-inference",
            "gpus": 16,
            "starts_at": start,
            "hours": 24 * 14,
            "weeks": 3,
            "project": "",
        },
    )
    assert (response.status_code, Reservation.objects.count()) == (200, 0)


def test_a_member_pins_a_workload_to_a_region_from_the_console(signed_in, mia):
    signed_in(mia).post(PAGE, {**FORM, "region": "eu-west"})
    assert Workload.objects.get(name="train-1").region == "eu-west"


def test_the_form_refuses_a_region_no_cluster_is_in(signed_in, mia):
    page = signed_in(mia).post(PAGE, {**FORM, "region": "mars"}).content.decode()
    assert "Select a valid choice" in page
    assert not Workload.objects.exists()


def test_the_workloads_page_says_in_which_cluster_and_region_work_runs(
    signed_in, mia, submit, cycle
):
    submit(name="serve", gpu_classes=("L4",), gpus=1)
    cycle()
    page = signed_in(mia).get(PAGE).content.decode()
    assert 'l4-01 <span class="muted">in us-east (us-east)</span>' in page


def test_the_detail_page_names_each_replicas_cluster_and_region(signed_in, mia, submit, cycle):
    submit(name="train-1")
    cycle()
    page = signed_in(mia).get(f"{PAGE}train-1/").content.decode()
    assert "<td>eu-west (eu-west)</td>" in page


# Query counts, locked: what each page reads stays the same however many rows it lists.


def test_the_workloads_page_reads_in_a_fixed_number_of_queries(
    signed_in, mia, submit, cycle, django_assert_num_queries
):
    for n in range(3):
        submit(name=f"w{n}", gpus=1, replicas=2)
    cycle()
    client = signed_in(mia)
    # 17: one of them the clusters' regions the submit form offers; four the namespace's
    # provisioning in each cluster (its records, the organization's quotas, the pools and
    # the clusters it may use).
    with django_assert_num_queries(17):
        client.get(PAGE)


def test_the_reservations_page_reads_in_a_fixed_number_of_queries(
    signed_in, alice, acme, cluster, django_assert_num_queries
):
    starts_at = clock.now().replace(minute=0, second=0, microsecond=0) + timedelta(days=2)
    for day in range(3):
        services.reservations_request(
            caller=Caller(user=alice),
            organization=acme,
            request=services.ReservationRequest(
                gpu_class="H100-80GB",
                gpus=8,
                starts_at=starts_at + timedelta(days=day),
                ends_at=starts_at + timedelta(days=day, hours=4),
            ),
        )
    client = signed_in(alice)
    # 18: the timeline reads the nodes and the reservations once, not once per pool; the
    # capacity calendar the caller's role, the nodes, the placements (none here: so no
    # workloads nor projects), the GPU classes, the tiers and the reservations.
    with django_assert_num_queries(15):
        client.get(RESERVATIONS)


def test_the_quotas_page_reads_in_a_fixed_number_of_queries(
    signed_in, alice, acme, submit, cycle, django_assert_num_queries
):
    submit(name="runs", gpus=1)
    cycle()
    for amount in (1, 2, 3):
        services.quota_request_create(
            caller=Caller(user=alice),
            organization=acme,
            ask=services.QuotaAsk(gpu_class="H100-80GB", amount=amount, reason="More."),
        )
    client = signed_in(alice)
    with django_assert_num_queries(15):
        client.get(QUOTAS)


def test_the_quota_page_tells_the_organization_its_fair_share_standing(signed_in, vic, quotas):
    page = signed_in(vic).get(QUOTAS).content.decode()
    assert "acme used 0 GPU-hours lately" in page
    assert "waiting work goes before its own" in page
