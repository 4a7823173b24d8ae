"""The Helm chart in deploy/helm/quiver, rendered by Helm's own engine.

``helm_python`` (the helm-python-sdk package, dev extra) runs Helm v4's Go SDK in
process: the same template engine, values schema check and hooks as ``helm
template``, with no ``helm`` binary or cluster. Rendered objects are checked by
the tests against the Kubernetes API's schemas (kubernetes-validate)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "quiver"
RELEASE, NAMESPACE = "quiver", "quiver"

Obj = dict[str, Any]

# Every option on: ingress with TLS, the checkpoint sinks, the workers' metrics
# port, a setting of the operator's own, a release name unlike the chart's.
EVERYTHING: Obj = {
    "image": {"repository": "registry.example.com/quiver", "tag": "2.0.1"},
    "imagePullSecrets": [{"name": "registry"}],
    "config": {
        "allowedHosts": ["quiver.example.com"],
        "csrfTrustedOrigins": ["https://quiver.example.com"],
        "trustedProxies": ["10.0.0.0/8"],
        "publicUrl": "https://quiver.example.com",
        "extraEnv": {"QUIVER_EF_SEARCH": 200, "QUIVER_EMBEDDING_ENGINE": "onnx"},
    },
    "audit": {
        "sinks": {
            "s3": "s3://quiver-audit/checkpoints",
            "s3Endpoint": "https://s3.eu-west-1.amazonaws.com",
            "s3Region": "eu-west-1",
            "s3LockDays": 365,
            "syslog": "udp://logs.example.internal:514",
            "syslogFacility": "auth",
        }
    },
    "web": {
        "ingress": {
            "enabled": True,
            "className": "nginx",
            "host": "quiver.example.com",
            "tlsSecretName": "quiver-tls",
        }
    },
    "metrics": {"workerPort": 9100},
    "nodeSelector": {"kubernetes.io/arch": "amd64"},
    "tolerations": [{"key": "quiver", "operator": "Exists", "effect": "NoSchedule"}],
}
# Fixed sizes, no autoscaling; workers seal as docker compose's do; no migrations.
FIXED: Obj = {
    "web": {"autoscaling": {"enabled": False}, "replicas": 3},
    "worker": {"autoscaling": {"enabled": False}, "replicas": 4},
    "learningWorker": {"autoscaling": {"enabled": False}, "replicas": 2},
    "sealer": {"enabled": False},
    "migrations": {"enabled": False},
}
VARIANTS = {"defaults": {}, "everything": EVERYTHING, "fixed": FIXED}


def render(values: Obj, release: str = RELEASE) -> dict[str, str]:
    """Template path -> the text Helm renders for an install with ``values``."""
    with helm.Chart.load(str(CHART)) as chart:
        return chart.render(values, name=release, namespace=NAMESPACE, is_install=True)


@functools.cache
def _objects(key: str) -> tuple[Obj, ...]:
    values = json.loads(key)
    found: list[Obj] = []
    for path, text in sorted(render(values).items()):
        if path.endswith(".txt"):
            continue
        found += [doc for doc in yaml.safe_load_all(text) if doc]
    return tuple(found)


def objects(values: Obj | None = None) -> list[Obj]:
    """Every object the chart makes with ``values`` (rendered once per values)."""
    return list(_objects(json.dumps(values or {}, sort_keys=True)))


def of_kind(found: list[Obj], kind: str) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in found if o["kind"] == kind}


def pod_specs(found: list[Obj]) -> Iterator[tuple[str, Obj]]:
    """(object name, pod spec) of every Deployment and Job."""
    for obj in found:
        if obj["kind"] in ("Deployment", "Job"):
            yield obj["metadata"]["name"], obj["spec"]["template"]["spec"]


def containers(found: list[Obj]) -> Iterator[tuple[str, Obj, Obj]]:
    """(object name, pod spec, container) of every container the chart runs."""
    for name, spec in pod_specs(found):
        for container in spec["containers"]:
            yield name, spec, container


def env_of(container: Obj) -> dict[str, Obj]:
    return {item["name"]: item for item in container.get("env", [])}


def value_of(container: Obj, name: str) -> str | None:
    return env_of(container).get(name, {}).get("value")
