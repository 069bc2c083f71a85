"""Migrations 0036 and 0037: the one provisioning record of a project (and the one
cluster-wide record) become one per cluster, each a copy of what every cluster's task last
wrote there; back, one record per project again, a failed one kept over the others."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("scheduling", "0035_scheduler_places_written_at")]
AFTER = [("scheduling", "0037_provisioning_records_to_clusters")]


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


@pytest.fixture
def before(transactional_db):
    """Apps at 0035 with two clusters, a project's failed record and the cluster-wide one."""
    apps = _migrate(BEFORE)
    for name in ("eu-west", "us-east"):
        apps.get_model("scheduling", "Cluster").objects.create(
            name=name, region=name, backend="simulated"
        )
    organization = apps.get_model("tenants", "Organization").objects.create(
        slug="acme", name="Acme"
    )
    project = apps.get_model("tenants", "Project").objects.create(
        organization=organization, slug="ai-dev", name="AI dev", namespace="acme-ai-dev"
    )
    records = apps.get_model("scheduling", "ProvisioningRecord").objects
    records.create(project=project, state="failed", error="forbidden", attempts=3)
    records.create(project=None, scope="cluster", state="ready")
    yield project.pk
    _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def test_each_cluster_gets_a_copy_of_the_projects_record(before):
    apps = _migrate(AFTER)
    records = apps.get_model("scheduling", "ProvisioningRecord").objects.filter(project=before)
    assert sorted(records.values_list("cluster__name", "state", "error", "attempts")) == [
        ("eu-west", "failed", "forbidden", 3),
        ("us-east", "failed", "forbidden", 3),
    ]


def test_each_cluster_gets_a_cluster_wide_record(before):
    apps = _migrate(AFTER)
    records = apps.get_model("scheduling", "ProvisioningRecord").objects.filter(project=None)
    assert sorted(records.values_list("cluster__name", "scope")) == [
        ("eu-west", "cluster"),
        ("us-east", "cluster"),
    ]


def test_back_a_project_keeps_one_record_the_failed_one(before):
    apps = _migrate(AFTER)
    records = apps.get_model("scheduling", "ProvisioningRecord").objects
    records.filter(project=before, cluster__name="eu-west").update(state="ready", error="")
    apps = _migrate(BEFORE)
    records = apps.get_model("scheduling", "ProvisioningRecord").objects
    assert list(records.filter(project=before).values_list("state", "error")) == [
        ("failed", "forbidden")
    ]
    assert records.filter(project=None).count() == 1
