"""A project's provisioning per cluster in the API: every member reads where its namespace is
ready, pending or failed, and why; a foreign tenant gets a 404."""

import itertools

import pytest

from scheduling.models import Cluster, NodePool, ProvisioningRecord

from ...queries import assert_list_queries
from ...roles import READING

pytestmark = pytest.mark.django_db

URL = "/api/v1/organizations/acme/projects/ai-dev/provisioning/"


@pytest.mark.parametrize(("caller", "status"), READING)
def test_every_member_reads_the_projects_provisioning_and_nobody_else(
    actors, ai_dev, api_as, caller, status
):
    client = api_as(None if caller == "anonymous" else actors[caller])
    assert client.get(URL).status_code == status


def test_another_organizations_project_is_a_404(ai_dev, api_as, bruno):
    assert api_as(bruno).get(URL).status_code == 404


def test_an_unknown_project_is_a_404(ai_dev, api_as, mia):
    url = "/api/v1/organizations/acme/projects/nowhere/provisioning/"
    assert api_as(mia).get(url).status_code == 404


def test_it_says_where_the_namespace_is_ready_and_where_it_failed_and_why(
    cluster, quotas, ai_dev, api_as, mia
):
    ProvisioningRecord.objects.create(
        project=ai_dev, cluster=Cluster.objects.get(name="eu-west"), state="ready"
    )
    ProvisioningRecord.objects.create(
        project=ai_dev,
        cluster=Cluster.objects.get(name="us-east"),
        state="failed",
        error="namespaces is forbidden",
    )
    body = api_as(mia).get(URL).json()
    assert [(r["cluster"], r["region"], r["state"], r["error"]) for r in body] == [
        ("eu-west", "eu-west", "ready", ""),
        ("us-east", "us-east", "failed", "namespaces is forbidden"),
    ]


def test_a_cluster_the_organization_may_use_that_has_no_record_yet_is_pending(
    cluster, quotas, ai_dev, api_as, mia
):
    ProvisioningRecord.objects.create(
        project=ai_dev, cluster=Cluster.objects.get(name="eu-west"), state="ready"
    )
    body = api_as(mia).get(URL).json()
    assert [(r["cluster"], r["state"]) for r in body] == [
        ("eu-west", "ready"),
        ("us-east", "pending"),
    ]


def test_the_list_takes_as_many_queries_for_many_clusters_as_for_one(ai_dev, api_as, mia):
    numbers = itertools.count()

    def add_rows(n: int) -> None:
        for _ in range(n):
            name = f"c-{next(numbers)}"
            cluster = Cluster.objects.create(name=name, region=name, backend="simulated")
            NodePool.objects.create(name=f"cpu-{name}", cluster=cluster, purpose="dev")
            ProvisioningRecord.objects.create(project=ai_dev, cluster=cluster)

    assert_list_queries(api_as(mia), URL, add_rows=add_rows, queries=7)
