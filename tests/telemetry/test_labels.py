"""Label values stay bounded: URL patterns, never paths, and a cap on names."""

from __future__ import annotations

import pytest

from telemetry.metrics import OTHER, BoundedLabel
from telemetry.middleware import readable


@pytest.mark.parametrize(
    ("route", "label"),
    [
        ("api/v1/select", "/api/v1/select"),
        ("tools/<int:tool_id>/", "/tools/<int:tool_id>/"),
        ("api/v1/tools/(?P<pk>[^/.]+)/?$", "/api/v1/tools/<pk>/"),
        ("api/v1/tools/?$", "/api/v1/tools/"),
        (
            "api/v1/jobs/(?P<pk>[^/.]+)/?\\.(?P<format>[a-z0-9]+)/?$",
            "/api/v1/jobs/<pk>/.<format>/",
        ),
    ],
)
def test_a_route_label_is_the_pattern_written_plainly(route, label):
    assert readable(route) == label


def test_names_past_the_cap_are_counted_as_other(settings):
    settings.QUIVER_METRICS_MAX_LABEL_VALUES = 3
    label = BoundedLabel("QUIVER_METRICS_MAX_LABEL_VALUES")
    assert [label(f"c{n}") for n in range(5)] == ["c0", "c1", "c2", OTHER, OTHER]
    # A name seen before the cap keeps its name afterwards.
    assert label("c1") == "c1"
    assert label("c4") == OTHER


def test_a_route_no_pattern_has_is_unmatched_and_static_files_are_static(rf):
    from telemetry.middleware import route_of

    request = rf.get("/no/such/path/12345")
    assert route_of(request) == "unmatched"
    assert route_of(rf.get("/static/quiver.css")) == "static"
    assert route_of(rf.get("/api/v1/tools/42")) == "/api/v1/tools/<pk>/"
