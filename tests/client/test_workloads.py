"""gpuctl's workload commands against a live server: submit from a job file (with overrides,
as a job array), list, get, why, events, cancel, wait; the errors and their exit codes."""

import json

import pytest
import yaml

from .conftest import advance, as_json, cycle, job_file

pytestmark = pytest.mark.django_db(transaction=True)

# EPOCHS a number, as people write it: gpuctl sends it as a string.
JOB = job_file(
    "train-small",
    command=["python", "train.py"],
    env={"EPOCHS": 3, "SIMULATED_RUNTIME_SECONDS": 600},
)


@pytest.fixture
def job(tmp_path):
    def write(text: str = JOB, name: str = "job.yaml"):
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write


def workload(gpuctl, name: str) -> dict:
    result = gpuctl("get", name, "-o", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_submit_sends_the_job_file_and_the_workload_waits_pending(gpuctl, logged_in, job):
    result = gpuctl("submit", "-f", job())
    assert result.exit_code == 0, result.output
    submitted = workload(gpuctl, "train-small")
    assert (submitted["state"], submitted["gpus"], submitted["command"]) == (
        "Pending",
        8,
        ["python", "train.py"],
    )
    assert "train-small" in result.stdout


def test_submit_with_a_region_pins_the_workload_there(gpuctl, logged_in, job):
    result = gpuctl("submit", "-f", job(), "--region", "eu-west")
    assert result.exit_code == 0, result.output
    assert workload(gpuctl, "train-small")["region"] == "eu-west"


def test_submit_with_an_unknown_region_is_refused_naming_it(gpuctl, logged_in, job):
    result = gpuctl("submit", "-f", job(), "--region", "mars")
    assert result.exit_code != 0
    assert "region" in result.output


def test_environment_values_written_as_numbers_are_sent_as_strings(gpuctl, logged_in, job):
    gpuctl("submit", "-f", job())
    assert workload(gpuctl, "train-small")["env"]["EPOCHS"] == "3"


def test_ls_lists_the_submitted_workload_with_its_state(gpuctl, logged_in, job):
    gpuctl("submit", "-f", job())
    listed = gpuctl("ls", "--state", "pending", "--name", "small", "-o", "json")
    assert [(w["name"], w["state"]) for w in json.loads(listed.stdout)] == [
        ("train-small", "Pending")
    ]
    assert "train-small" in gpuctl("ls").stdout


def test_set_overrides_fields_and_dotted_keys_of_the_file(gpuctl, logged_in, job):
    result = gpuctl("submit", "-f", job(), "--set", "gpus=4", "--set", "env.EPOCHS=5")
    assert result.exit_code == 0, result.output
    submitted = workload(gpuctl, "train-small")
    assert (submitted["gpus"], submitted["env"]["EPOCHS"]) == (4, "5")


def test_a_job_array_submits_one_workload_per_index_through_the_batch(gpuctl, logged_in, job):
    result = gpuctl("submit", "-f", job(JOB + "array: 3\n"), "-o", "json")
    assert result.exit_code == 0, result.output
    created = json.loads(result.stdout)
    assert [(w["name"], w["env"]["GPUCTL_ARRAY_INDEX"]) for w in created] == [
        ("train-small-0", "0"),
        ("train-small-1", "1"),
        ("train-small-2", "2"),
    ]


def test_an_array_of_items_gives_each_its_item_or_its_fields(gpuctl, logged_in, job):
    items = JOB + "array:\n  - shard-a\n  - {gpus: 2}\n"
    created = json.loads(gpuctl("submit", "-f", job(items), "-o", "json").stdout)
    assert (created[0]["env"]["GPUCTL_ARRAY_ITEM"], created[0]["gpus"], created[1]["gpus"]) == (
        "shard-a",
        8,
        2,
    )


def test_why_tells_the_pending_reason_and_queue_position(gpuctl, logged_in, job):
    gpuctl("submit", "-f", job(), "--set", "name=too-big", "--set", "replicas=5")
    cycle()
    result = gpuctl("why", "too-big")
    answer = json.loads(gpuctl("why", "too-big", "-o", "json").stdout)
    assert answer["pending"]["code"] == "quota"
    assert answer["pending"]["message"] in result.stdout
    assert "queue position: " in result.stdout


def test_why_of_a_running_workload_says_it_does_not_wait(gpuctl, logged_in, job):
    gpuctl("submit", "-f", job())
    cycle()
    advance(10)
    assert "train-small is not waiting: Running since" in gpuctl("why", "train-small").stdout


def test_ls_and_get_show_the_cluster_and_region_a_workload_runs_in(gpuctl, logged_in, job):
    gpuctl("submit", "-f", job())
    cycle()
    assert "eu-west (eu-west)" in gpuctl("ls").stdout
    shown = gpuctl("get", "train-small").stdout
    assert "CLUSTER" in shown and "REGION" in shown and "eu-west" in shown


def test_cancel_ends_the_workload_cancelled(gpuctl, logged_in, job):
    gpuctl("submit", "-f", job())
    result = gpuctl("cancel", "train-small")
    assert result.exit_code == 0, result.output
    assert workload(gpuctl, "train-small")["state"] == "Cancelled"


def test_events_list_the_workloads_timeline(gpuctl, logged_in, job):
    gpuctl("submit", "-f", job())
    cycle()
    events = json.loads(gpuctl("events", "train-small", "-o", "json").stdout)
    assert [e["kind"] for e in events][:2] == ["submitted", "admitted"]


def test_checkpoint_reports_a_running_workloads_checkpoint(gpuctl, logged_in, job):
    gpuctl("submit", "-f", job())
    cycle()
    advance(10)
    result = gpuctl("checkpoint", "train-small", "-o", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["last_checkpoint_at"] is not None


def test_a_job_file_declares_its_checkpoint_interval(gpuctl, logged_in, job):
    gpuctl("submit", "-f", job(), "--set", "checkpoint_interval_seconds=1800")
    assert workload(gpuctl, "train-small")["checkpoint_interval_seconds"] == 1800


def test_wait_returns_once_the_workload_runs(gpuctl, logged_in, job):
    gpuctl("submit", "-f", job())
    cycle()
    advance(10)
    result = gpuctl("wait", "train-small", "--interval", "0.05")
    assert (result.exit_code, "train-small: Running" in result.stderr) == (0, True)


def test_wait_for_done_exits_5_when_the_workload_fails(gpuctl, logged_in, job):
    gpuctl("submit", "-f", job(), "--set", "env.SIMULATED_EXIT=fail")
    cycle()
    advance(700)
    result = gpuctl("wait", "train-small", "--for", "done", "--interval", "0.05")
    assert (result.exit_code, "train-small ended Failed" in result.stderr) == (5, True)


def test_submit_wait_gives_up_after_its_timeout_with_exit_5(gpuctl, logged_in, job):
    result = gpuctl("submit", "-f", job(), "--wait", "--timeout", "0.2", "--interval", "0.05")
    assert (result.exit_code, "train-small: Pending" in result.stderr) == (5, True)


def test_ls_watch_refreshes_the_table_until_its_timeout(gpuctl, logged_in, job):
    gpuctl("submit", "-f", job())
    result = gpuctl("ls", "-w", "--interval", "0.05", "--timeout", "0.2")
    assert (result.exit_code, "train-small" in result.stdout) == (0, True)


def test_a_refused_submission_prints_the_field_errors_and_exits_1(gpuctl, logged_in, job):
    result = gpuctl("submit", "-f", job(), "--set", "gpus=100", "--set", "replicas=0")
    assert result.exit_code == 1
    assert "gpus:" in result.stderr and "replicas:" in result.stderr
    assert "Traceback" not in result.output


def test_an_unknown_workload_exits_1_with_the_apis_message(gpuctl, logged_in):
    result = gpuctl("get", "nothing-here")
    assert (result.exit_code, "(404 not_found)" in result.stderr) == (1, True)


@pytest.mark.parametrize(
    "args",
    [("submit",), ("submit", "-f", "job.yaml", "--set", "no-equals-sign"), ("ls", "-o", "xml")],
)
def test_bad_usage_exits_2(gpuctl, logged_in, job, args):
    job()
    assert gpuctl(*[job() if a == "job.yaml" else a for a in args]).exit_code == 2


def test_a_job_file_that_is_not_yaml_exits_2(gpuctl, logged_in, job):
    assert gpuctl("submit", "-f", job("name: [unclosed\n")).exit_code == 2


def test_a_bad_token_exits_3(gpuctl, logged_in):
    assert gpuctl("ls", env={"GPUCTL_TOKEN": "gpc_wrong"}).exit_code == 3


def test_a_read_only_tokens_write_exits_3(gpuctl, logged_in, job, demo):
    from django.contrib.auth import get_user_model

    from tenants.models import Organization
    from tenants.permissions import Caller
    from tenants.services import token_issue

    _, read_only = token_issue(
        caller=Caller(user=get_user_model().objects.get(email="alice@acme.example")),
        organization=Organization.objects.get(slug="acme"),
        name="read",
    )
    assert gpuctl("submit", "-f", job(), env={"GPUCTL_TOKEN": read_only}).exit_code == 3


def test_yaml_output_is_the_apis_object(gpuctl, logged_in, job):
    import yaml

    gpuctl("submit", "-f", job())
    shown = gpuctl("get", "train-small", "-o", "yaml").stdout
    assert yaml.safe_load(shown)["name"] == "train-small"


def test_a_job_file_is_read_from_standard_input(gpuctl, logged_in):
    assert gpuctl("submit", "-f", "-", input=JOB).exit_code == 0
    assert workload(gpuctl, "train-small")["state"] == "Pending"


def test_the_documents_of_one_file_are_submitted_together(gpuctl, logged_in, job):
    two = JOB + "---\n" + JOB.replace("train-small", "train-other")
    created = json.loads(gpuctl("submit", "-f", job(two), "-o", "json").stdout)
    assert [w["name"] for w in created] == ["train-small", "train-other"]


def test_no_project_to_act_in_is_bad_usage(gpuctl, live_server, secret):
    """acme has two projects: without --project or a context's, gpuctl cannot choose."""
    result = gpuctl("ls", env={"GPUCTL_URL": live_server.url, "GPUCTL_TOKEN": secret})
    assert (result.exit_code, "--project" in result.output) == (2, True)


def test_the_files_project_beats_the_contexts_and_the_flag_beats_the_file(gpuctl, logged_in, job):
    elsewhere = job(JOB + "project: ai-prod\n")
    gpuctl("submit", "-f", elsewhere)
    gpuctl("submit", "-f", elsewhere, "-p", "ai-dev", "--set", "name=train-here")
    in_prod = gpuctl("get", "train-small", "-p", "ai-prod", "-o", "json")
    assert json.loads(in_prod.stdout)["project"] == "ai-prod"
    assert workload(gpuctl, "train-here")["project"] == "ai-dev"


def test_why_lists_what_would_unblock_a_pending_workload(gpuctl, logged_in, job):
    gpuctl("submit", "-f", job(), "--set", "name=too-big", "--set", "replicas=5")
    cycle()
    result = gpuctl("why", "too-big")
    assert "What would unblock it" in result.stdout
    assert "4 GPUs per replica instead of 8: starts now on dgx-h100" in result.stdout


def test_why_links_a_quota_request_for_the_missing_gpus_to_the_form_filled_in(
    gpuctl, logged_in, job
):
    gpuctl("submit", "-f", job(), "--set", "name=too-big", "--set", "replicas=5")
    cycle()
    pending = json.loads(gpuctl("why", "too-big", "-o", "json").stdout)["pending"]
    ask = next(a for a in pending["alternatives"] if a["kind"] == "quota_request")
    line = f"ask for 8 more: {logged_in}{ask['quota_request']['form_url']}"
    assert (ask["quota_request"]["amount"], line in gpuctl("why", "too-big").stdout) == (8, True)


def test_submit_check_prints_what_would_happen_and_submits_nothing(gpuctl, logged_in, job):
    cycle()
    result = gpuctl("submit", "--check", "-f", job())
    assert result.exit_code == 0, result.output
    assert "admitted" in result.stdout and "H100-80GB" in result.stdout
    listed = json.loads(gpuctl("ls", "-o", "json").stdout)
    assert "train-small" not in [w["name"] for w in listed]


def test_submit_check_answers_in_json_with_the_apis_fields(gpuctl, logged_in, job):
    cycle()
    report = as_json(gpuctl("submit", "--check", "-f", job(), "-o", "json"))
    (answer,) = report["workloads"]
    assert (answer["name"], answer["outcome"], answer["gpu_class"]) == (
        "train-small",
        "admitted",
        "H100-80GB",
    )
    assert report["basis"]["source"] == "last_cycle"


def test_submit_check_of_a_job_array_answers_each_workload(gpuctl, logged_in, job):
    cycle()
    result = gpuctl("submit", "--check", "-f", job(), "--set", "array=3", "-o", "yaml")
    assert result.exit_code == 0, result.output
    report = yaml.safe_load(result.stdout)
    assert [w["name"] for w in report["workloads"]] == [
        "train-small-0",
        "train-small-1",
        "train-small-2",
    ]
