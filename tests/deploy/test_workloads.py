"""The portal's own pods: probes, resources, non-root read-only containers, one beat, the
configuration they read, and what production changes."""

import pytest

from .conftest import OVERLAYS, objects_of

COMPONENTS = ("portal-web", "portal-worker", "portal-worker-cycle", "portal-beat")


def pod_specs(documents: list[dict]) -> dict[str, dict]:
    """Every pod template, Deployments' and the migration Job's, by name."""
    return {
        d["metadata"]["name"]: d["spec"]["template"]["spec"]
        for d in documents
        if d["kind"] in {"Deployment", "Job"}
    }


def container_of(documents: list[dict], name: str) -> dict:
    [container] = pod_specs(documents)[name]["containers"]
    return container


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("name", COMPONENTS)
def test_every_deployment_has_liveness_and_readiness_probes(rendered, overlay, name):
    container = container_of(rendered[overlay], name)
    assert "livenessProbe" in container
    assert "readinessProbe" in container


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_web_is_alive_on_healthz_and_ready_on_readyz_as_an_allowed_https_host(rendered, overlay):
    container = container_of(rendered[overlay], "portal-web")
    config = objects_of(rendered[overlay], "ConfigMap")["portal-config"]["data"]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        request = container[probe]["httpGet"]
        headers = {h["name"]: h["value"] for h in request["httpHeaders"]}
        assert request["path"] == path
        # Not redirected to HTTPS, not refused as a disallowed host.
        assert headers["X-Forwarded-Proto"] == "https"
        assert headers["Host"] in config["ALLOWED_HOSTS"].split(",")


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("name", [*COMPONENTS, "portal-migrate"])
def test_every_container_has_requests_and_limits(rendered, overlay, name):
    resources = container_of(rendered[overlay], name)["resources"]
    assert set(resources["requests"]) == set(resources["limits"]) == {"cpu", "memory"}


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("name", [*COMPONENTS, "portal-migrate"])
def test_every_pod_runs_as_non_root_on_a_read_only_root_file_system(rendered, overlay, name):
    spec = pod_specs(rendered[overlay])[name]
    [container] = spec["containers"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] != 0
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_beat_is_exactly_one_replica_replaced_not_rolled(rendered, overlay):
    beat = objects_of(rendered[overlay], "Deployment")["portal-beat"]
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_migrations_run_as_a_job(rendered, overlay):
    container = container_of(rendered[overlay], "portal-migrate")
    assert container["command"] == ["python", "manage.py", "migrate", "--no-input"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_only_pods_that_call_the_kubernetes_api_carry_its_token(rendered, overlay):
    specs = pod_specs(rendered[overlay])
    carrying = {name for name, s in specs.items() if s.get("automountServiceAccountToken", True)}
    assert carrying == {"portal-web", "portal-worker", "portal-worker-cycle"}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_ingress_host_is_allowed_and_trusted_for_csrf(rendered, overlay):
    config = objects_of(rendered[overlay], "ConfigMap")["portal-config"]["data"]
    [rule] = objects_of(rendered[overlay], "Ingress")["portal-web"]["spec"]["rules"]
    assert rule["host"] in config["ALLOWED_HOSTS"].split(",")
    origins = config["CSRF_TRUSTED_ORIGINS"].split(",")
    assert any(origin.endswith(f"://{rule['host']}") for origin in origins)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_pdbs_select_existing_pods(rendered, overlay):
    templates = [
        d["spec"]["template"]["metadata"]["labels"]
        for d in objects_of(rendered[overlay], "Deployment").values()
    ]
    for budget in objects_of(rendered[overlay], "PodDisruptionBudget").values():
        selector = budget["spec"]["selector"]["matchLabels"]
        assert any(selector.items() <= labels.items() for labels in templates)


def test_dev_ships_placeholder_secrets_with_every_key_the_pods_read(rendered):
    secrets = objects_of(rendered["dev"], "Secret")
    assert set(secrets["portal-secrets"]["stringData"]) == {
        "SECRET_KEY",
        "DATABASE_URL",
        "CELERY_BROKER_URL",
        "CACHE_URL",
    }
    assert "placeholder" in secrets["portal-secrets"]["stringData"]["SECRET_KEY"]
    assert "placeholder" in secrets["portal-metrics"]["stringData"]["token"]


def test_production_ships_no_secret_so_applying_it_never_overwrites_the_real_ones(rendered):
    assert objects_of(rendered["production"], "Secret") == {}


def replicas(documents: list[dict]) -> dict[str, int]:
    return {n: d["spec"]["replicas"] for n, d in objects_of(documents, "Deployment").items()}


def test_production_runs_more_web_and_worker_replicas_than_dev(rendered):
    dev, production = replicas(rendered["dev"]), replicas(rendered["production"])
    assert production["portal-web"] >= 3 > dev["portal-web"]
    assert production["portal-worker"] >= 2 > dev["portal-worker"]
    assert production["portal-beat"] == dev["portal-beat"] == 1


def cpu_milli(quantity: str) -> int:
    return int(quantity[:-1]) if quantity.endswith("m") else int(float(quantity) * 1000)


@pytest.mark.parametrize("name", ["portal-web", "portal-worker", "portal-worker-cycle"])
def test_production_requests_more_cpu_than_dev(rendered, name):
    dev = container_of(rendered["dev"], name)["resources"]["requests"]["cpu"]
    production = container_of(rendered["production"], name)["resources"]["requests"]["cpu"]
    assert cpu_milli(production) > cpu_milli(dev)


def test_production_runs_the_production_settings_without_debug_over_https(rendered):
    config = objects_of(rendered["production"], "ConfigMap")["portal-config"]["data"]
    assert config["DJANGO_SETTINGS_MODULE"] == "portal.settings.production"
    assert config.get("DEBUG", "false").lower() in {"0", "false", "no", "off"}
    assert config["SECURE_SSL_REDIRECT"] == "true"
    assert config["LOG_LEVEL"] != "DEBUG"
    assert all(o.startswith("https://") for o in config["CSRF_TRUSTED_ORIGINS"].split(","))
    assert objects_of(rendered["production"], "Ingress")["portal-web"]["spec"]["tls"]


def test_production_pins_an_image_version(rendered):
    for spec in pod_specs(rendered["production"]).values():
        image = spec["containers"][0]["image"]
        assert not image.endswith(":latest") and ":" in image
