"""The chart renders with Helm, lints clean, refuses values its schema forbids, and
every object it makes is valid Kubernetes for the oldest and the newest version it
supports (kubernetes-validate, strict: an unknown field is an error too)."""

from __future__ import annotations

import re

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from tests.deploy.chart import CHART, EVERYTHING, VARIANTS, objects, of_kind, render

# Chart.yaml's kubeVersion floor, and the newest the validator's schemas know.
KUBE_VERSIONS = ("1.27.0", "1.37.0")


def test_the_chart_supports_the_versions_it_is_checked_against():
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["kubeVersion"] == f">={KUBE_VERSIONS[0]}-0"
    assert kubernetes_validate.latest_version() == KUBE_VERSIONS[-1]


def test_helm_lints_the_chart_with_no_warning():
    for values in VARIANTS.values():
        report = helm.lint(str(CHART), values, strict=True, kube_version="v1.27.0")
        assert report["errors"] == []
        problems = [m for m in report["messages"] if m["severity"] >= 2]
        assert problems == []


@pytest.mark.parametrize("version", KUBE_VERSIONS)
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_object_is_valid_kubernetes(variant, version):
    found = objects(VARIANTS[variant])
    assert found
    for obj in found:
        kubernetes_validate.validate(obj, version, strict=True)


def test_a_schema_check_would_catch_a_wrong_field():
    web = of_kind(objects(), "Deployment")["quiver-web"]
    web["spec"]["template"]["spec"]["containers"][0]["livenessprobe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(web, KUBE_VERSIONS[0], strict=True)


def test_the_defaults_make_every_part_and_nothing_else():
    kinds = sorted((o["kind"], o["metadata"]["name"]) for o in objects())
    assert kinds == [
        ("Deployment", "quiver-learning"),
        ("Deployment", "quiver-sealer"),
        ("Deployment", "quiver-web"),
        ("Deployment", "quiver-worker"),
        ("HorizontalPodAutoscaler", "quiver-learning"),
        ("HorizontalPodAutoscaler", "quiver-web"),
        ("HorizontalPodAutoscaler", "quiver-worker"),
        ("Job", "quiver-migrate"),
        ("PodDisruptionBudget", "quiver-web"),
        ("Service", "quiver-web"),
        ("ServiceAccount", "quiver"),
    ]


def test_everything_adds_the_ingress_and_names_follow_the_release():
    found = objects(EVERYTHING)
    ingress = of_kind(found, "Ingress")["quiver-web"]
    [rule] = ingress["spec"]["rules"]
    assert rule["host"] == "quiver.example.com"
    backend = rule["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": "quiver-web", "port": {"name": "http"}}
    assert ingress["spec"]["tls"] == [
        {"hosts": ["quiver.example.com"], "secretName": "quiver-tls"}
    ]
    renamed = render({}, release="prod")
    assert "name: prod-quiver-web" in renamed["quiver/templates/web.yaml"]


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"audit": {"checkpointStore": "file"}}, "/audit/checkpointStore"),
        ({"config": {"extraEnv": {"SECRET_KEY": "x"}}}, "SECRET_KEY"),
        ({"config": {"extraEnv": {"DATABASE_URL": "x"}}}, "DATABASE_URL"),
        ({"config": {"extraEnv": {"lower": "x"}}}, "lower"),
        ({"worker": {"concurrency": 0}}, "/worker/concurrency"),
        ({"web": {"threads": 2}}, "/web/threads"),
        ({"web": {"ingress": {"enabled": True}}}, "/web/ingress/host"),
        ({"migrations": {"appRole": "Robert'); DROP"}}, "/migrations/appRole"),
        ({"audit": {"sinks": {"s3": "https://bucket"}}}, "/audit/sinks/s3"),
        ({"secrets": {"name": "quiver", "values": {"secret-key": "x"}}}, "values"),
    ],
)
def test_values_the_schema_forbids_stop_the_render_naming_them(values, where):
    with pytest.raises(helm.HelmValuesError, match=re.escape(where)):
        render(values)
