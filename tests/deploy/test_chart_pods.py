"""What each pod of the chart runs: the same processes as make run and docker
compose, probes on /healthz, resources, autoscaling, secrets only from the Secret,
and no volume shared between pods."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import yaml

from telemetry.health import CHECKS, NAMED_ONLY, routed_queues
from tests.deploy.chart import (
    EVERYTHING,
    FIXED,
    ROOT,
    VARIANTS,
    containers,
    env_of,
    objects,
    of_kind,
    pod_specs,
    value_of,
)
from tests.docs.env_reads import project_env_reads

# The settings that hold secrets (config/settings.py): never a plain value.
SECRETS = {
    "SECRET_KEY": "secret-key",
    "DATABASE_URL": "database-url",
    "CELERY_BROKER_URL": "broker-url",
    "QUIVER_SOURCE_KEY": "source-key",
    "QUIVER_SOURCE_OLD_KEYS": "source-old-keys",
    "QUIVER_METRICS_TOKEN": "metrics-token",
    "QUIVER_AUDIT_CHECKPOINT_URL": "checkpoint-url",
    "QUIVER_AUDIT_CHECKPOINT_S3_ACCESS_KEY": "s3-access-key",
    "QUIVER_AUDIT_CHECKPOINT_S3_SECRET_KEY": "s3-secret-key",
    "EMAIL_HOST_PASSWORD": "email-password",
    "QUIVER_LLM_API_KEY": "llm-api-key",
    "QUIVER_EMBEDDING_API_KEY": "embedding-api-key",
}
REQUIRED = {"SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL"}


def deployments(values: dict | None = None) -> dict:
    return of_kind(objects(values), "Deployment")


def main_container(deployment: dict) -> dict:
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return container


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def test_web_runs_the_images_gunicorn_as_compose_does():
    web = main_container(deployments()["quiver-web"])
    assert "command" not in web and "args" not in web
    assert "command" not in compose()["web"]
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["gunicorn", "-c", "python:config.gunicorn"' in dockerfile
    assert web["lifecycle"]["preStop"]["exec"]["command"] == ["sleep", "5"]
    assert value_of(web, "QUIVER_WEB_WORKERS") == "2"
    assert value_of(web, "QUIVER_WEB_THREADS") == "12"


def test_the_workers_take_the_queues_as_compose_and_make_run_split_them():
    found = deployments()
    worker = main_container(found["quiver-worker"])
    learning = main_container(found["quiver-learning"])
    assert worker["args"] == compose()["worker"]["command"]
    assert learning["args"] == compose()["learning-worker"]["command"]
    queues = [
        set(c["args"][c["args"].index("-Q") + 1].split(",")) for c in (worker, learning)
    ]
    assert set().union(*queues) == routed_queues()
    assert all(len(taken) == 1 for taken in queues)


def test_the_sealer_pod_seals_and_the_workers_leave_it_to_that_pod():
    found = deployments()
    sealer = found["quiver-sealer"]
    assert sealer["spec"]["replicas"] == 1
    args = main_container(sealer)["args"]
    assert args[:5] == ["python", "manage.py", "audit_seal", "--every", "2"]
    for name in ("quiver-worker", "quiver-learning", "quiver-web"):
        container = main_container(found[name])
        assert value_of(container, "QUIVER_AUDIT_SEALER_IN_WORKERS") == "false"


def test_without_the_sealer_pod_every_worker_seals():
    found = deployments(FIXED)
    assert "quiver-sealer" not in found
    worker = main_container(found["quiver-worker"])
    assert value_of(worker, "QUIVER_AUDIT_SEALER_IN_WORKERS") == "true"


def test_the_migrations_run_as_the_owner_before_install_and_upgrade():
    job = of_kind(objects(), "Job")["quiver-migrate"]
    hooks = job["metadata"]["annotations"]["helm.sh/hook"]
    assert hooks == "pre-install,pre-upgrade"
    [container] = job["spec"]["template"]["spec"]["containers"]
    script = container["args"][-1]
    assert script.split(" && ") == [
        "python manage.py migrate --noinput",
        "python manage.py audit_app_role quiver_app",
        "python manage.py bootstrap --no-demo",
    ]
    env = env_of(container)
    assert env["DATABASE_URL"]["valueFrom"]["secretKeyRef"]["key"] == (
        "owner-database-url"
    )
    assert env["QUIVER_APP_DB_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"] == (
        "app-db-password"
    )
    # It runs before the release's own ServiceAccount exists.
    assert "serviceAccountName" not in job["spec"]["template"]["spec"]
    assert "Job" not in {o["kind"] for o in objects(FIXED)}


def test_web_probes_ask_for_the_web_part_alone_under_an_allowed_host():
    web = main_container(deployments(EVERYTHING)["quiver-web"])
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        get = web[probe]["httpGet"]
        url = urlparse(get["path"])
        assert url.path == "/healthz"
        parts = parse_qs(url.query)["parts"][0].split(",")
        assert parts == ["web"] and set(parts) <= {*CHECKS, *NAMED_ONLY}
        assert get["port"] == "http"
        assert get["httpHeaders"] == [{"name": "Host", "value": "localhost"}]
    hosts = value_of(web, "ALLOWED_HOSTS")
    assert hosts == "quiver.example.com,localhost"


def test_the_web_probe_is_answered_by_healthz(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # a shared part down
    path = main_container(deployments()["quiver-web"])["livenessProbe"]["httpGet"]
    response = client.get(path["path"], HTTP_HOST="localhost")
    assert response.status_code == 200


def test_workers_and_the_sealer_have_liveness_probes():
    found = deployments()
    in_compose = str(compose()["worker"]["healthcheck"]["test"])
    assert "celery -A config inspect ping -d celery@$$HOSTNAME" in in_compose
    for name in ("quiver-worker", "quiver-learning"):
        probe = main_container(found[name])["livenessProbe"]["exec"]["command"]
        assert probe == [
            "sh",
            "-c",
            'celery -A config inspect ping -d "celery@$HOSTNAME" --timeout 10',
        ]
    sealer = main_container(found["quiver-sealer"])
    assert "/tmp/sealer.beat" in sealer["livenessProbe"]["exec"]["command"][-1]
    assert sealer["args"][-2:] == ["--heartbeat", "/tmp/sealer.beat"]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_container_has_resources_and_runs_unprivileged(variant):
    for name, spec, container in containers(objects(VARIANTS[variant])):
        for bound in ("requests", "limits"):
            assert {"cpu", "memory"} <= set(container["resources"][bound]), name
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["automountServiceAccountToken"] is False
        context = container["securityContext"]
        assert context["readOnlyRootFilesystem"] is True, name
        assert context["allowPrivilegeEscalation"] is False, name


def test_web_and_both_workers_scale_by_cpu():
    found = objects()
    hpas = of_kind(found, "HorizontalPodAutoscaler")
    targets = {h["spec"]["scaleTargetRef"]["name"] for h in hpas.values()}
    assert targets == {"quiver-web", "quiver-worker", "quiver-learning"}
    for name, deployment in deployments().items():
        # An autoscaled Deployment leaves its size to the HPA.
        assert ("replicas" in deployment["spec"]) == (name not in targets), name
    fixed = objects(FIXED)
    assert not of_kind(fixed, "HorizontalPodAutoscaler")
    sizes = {n: d["spec"]["replicas"] for n, d in of_kind(fixed, "Deployment").items()}
    assert sizes == {"quiver-web": 3, "quiver-worker": 4, "quiver-learning": 2}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_no_pod_mounts_a_volume_another_pod_could_write(variant):
    found = objects(VARIANTS[variant])
    assert not {"PersistentVolumeClaim", "PersistentVolume"} & {
        o["kind"] for o in found
    }
    for name, spec in pod_specs(found):
        for volume in spec["volumes"]:
            kinds = set(volume) - {"name"}
            assert kinds in ({"emptyDir"}, {"secret"}), (name, volume)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_secrets_come_only_from_the_secret(variant):
    found = objects(VARIANTS[variant])
    assert "Secret" not in {o["kind"] for o in found}
    for name, _spec, container in containers(found):
        env = env_of(container)
        for setting, key in SECRETS.items():
            assert "value" not in env[setting], (name, setting)
            ref = env[setting]["valueFrom"]["secretKeyRef"]
            assert ref["name"] == "quiver"
            if setting != "DATABASE_URL" or not name.endswith("migrate"):
                assert ref["key"] == key
            assert ref.get("optional", False) == (setting not in REQUIRED)


def test_the_audit_keys_are_files_from_the_secret_in_every_pod():
    for name, spec, container in containers(objects()):
        mounts = {m["name"]: m for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in spec["volumes"]}
        for setting, volume, optional in (
            ("QUIVER_AUDIT_KEY_FILE", "audit-key", False),
            ("QUIVER_AUDIT_OLD_KEYS_FILE", "audit-old-keys", True),
        ):
            path = Path(value_of(container, setting) or "")
            assert mounts[volume]["mountPath"] == str(path.parent), name
            assert mounts[volume]["readOnly"] is True
            secret = volumes[volume]["secret"]
            assert secret["secretName"] == "quiver"
            assert secret["items"] == [{"key": path.name, "path": path.name}]
            assert secret.get("optional", False) is optional


def test_every_pod_keeps_its_checkpoints_and_encoder_in_postgres():
    for name, _spec, container in containers(objects()):
        assert value_of(container, "QUIVER_AUDIT_CHECKPOINT_STORE") == "postgres", name
        assert value_of(container, "QUIVER_QUERY_ENCODER_STORE") == "postgres", name
        assert value_of(container, "QUIVER_STATIC_SENTENCES") == "true", name


def test_every_variable_the_chart_sets_is_one_quiver_reads():
    reads = project_env_reads()
    for values in VARIANTS.values():
        for name, _spec, container in containers(objects(values)):
            unknown = set(env_of(container)) - set(reads)
            assert not unknown, (name, unknown)


def test_the_web_pods_settings_pass_djangos_deploy_checks(tmp_path):
    """The web container's environment, with the Secret's values filled in, is a
    configuration Quiver starts with and ``check --deploy`` finds clean."""
    web = main_container(deployments(EVERYTHING)["quiver-web"])
    key = tmp_path / "audit-key"
    key.write_text("k" * 64)
    env = {"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "config.settings"}
    for name, item in env_of(web).items():
        if "value" in item:
            env[name] = item["value"]
    env |= {
        "QUIVER_AUDIT_KEY_FILE": str(key),
        "QUIVER_AUDIT_OLD_KEYS_FILE": str(tmp_path / "none"),
        "SECRET_KEY": "s" * 60 + "-Quiver-chart-test",
        "DATABASE_URL": "postgresql://quiver_app:x@postgres:5432/quiver",
        "CELERY_BROKER_URL": "redis://redis:6379/0",
        "QUIVER_AUDIT_CHECKPOINT_S3_ACCESS_KEY": "access",
        "QUIVER_AUDIT_CHECKPOINT_S3_SECRET_KEY": "secret",
        "QUIVER_STATE_DIR": str(tmp_path / "data"),
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
