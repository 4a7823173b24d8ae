"""Every query parameter of the audit API, its export, the console list, the
dashboard and the change pages is parsed into a bounded type: an extreme value is
a 400 naming the parameter (API) or a form error naming it (console), never a 500.
"""

from __future__ import annotations

from typing import Any

import pytest

from config.params import DAY_RULE, PAGE_RULE

pytestmark = pytest.mark.django_db

EXTREME_DAYS = [
    "9999-12-31",
    "0001-01-01",
    "1999-12-31",
    "9001-01-01",
    "2024-02-30",
    "+2024-01-01",
    "2024-1-1x",
    "99999-01-01",
]
EXTREME_NUMBERS = [
    "99999999999999999999",
    "9223372036854775808",
    "-1",
    "0",
    "1e9",
    "²",
    "١٢",
    " 1",
    "1" * 5000,
]
# A page accepts what Django's integer field does (" 1", other scripts' digits).
CONSOLE_BAD_PAGES = [v for v in EXTREME_NUMBERS if v not in (" 1", "١٢")]
API_LISTS = ["/api/v1/audit/", "/api/v1/audit/export/"]


def fields(response: Any) -> list[str]:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "invalid"
    return list(body["fields"])


@pytest.mark.parametrize("url", API_LISTS)
@pytest.mark.parametrize("name", ["since", "until"])
@pytest.mark.parametrize("value", EXTREME_DAYS)
def test_an_api_day_out_of_range_is_a_400_naming_it(
    with_key: Any, url: str, name: str, value: str
) -> None:
    response = with_key("compliance").get(url, {name: value})
    assert fields(response) == [name]
    assert response.json()["fields"][name] == [DAY_RULE]


@pytest.mark.parametrize("url", API_LISTS)
def test_the_first_and_last_day_allowed_are_answered(with_key: Any, url: str) -> None:
    api = with_key("compliance")
    response = api.get(url, {"since": "2000-01-01", "until": "9000-12-31"})
    assert response.status_code == 200, response.content


@pytest.mark.parametrize("value", EXTREME_NUMBERS)
def test_an_api_page_out_of_range_is_a_400_naming_it(with_key: Any, value: str) -> None:
    response = with_key("compliance").get("/api/v1/audit/", {"page": value})
    assert fields(response) == ["page"]
    assert response.json()["detail"] == f"page: {PAGE_RULE}"


def test_the_last_page_number_allowed_is_an_empty_page_not_an_error(
    with_key: Any,
) -> None:
    response = with_key("compliance").get("/api/v1/audit/", {"page": "1000000"})
    assert response.status_code == 404


@pytest.mark.parametrize(
    "value",
    ["99999999999999999999", "²", "0", "1999-01-01", "9999-12-31T23:59:59-12:00"],
)
def test_verify_refuses_a_since_out_of_range_naming_it(
    with_key: Any, value: str
) -> None:
    response = with_key("compliance").get("/api/v1/audit/verify/", {"since": value})
    assert fields(response) == ["since"]


def test_verify_still_takes_an_id_or_a_day(with_key: Any) -> None:
    api = with_key("compliance")
    assert api.get("/api/v1/audit/verify/", {"since": "1"}).status_code == 200
    assert api.get("/api/v1/audit/verify/", {"since": "2024-05-01"}).status_code == 200


def test_why_not_refuses_a_tool_name_past_its_limit(with_key: Any, trail: Any) -> None:
    url = f"/api/v1/audit/{trail.refund.pk}/why-not/"
    response = with_key("compliance").get(url, {"tool": "x" * 201})
    assert fields(response) == ["tool"]


@pytest.mark.parametrize("name", ["since", "until"])
@pytest.mark.parametrize("value", EXTREME_DAYS)
def test_the_console_list_shows_a_day_out_of_range_as_a_form_error(
    as_compliance: Any, name: str, value: str
) -> None:
    response = as_compliance.get("/audit/", {name: value})
    assert response.status_code == 200
    assert response.context["filters"].errors[name] == [DAY_RULE]


@pytest.mark.parametrize("value", CONSOLE_BAD_PAGES)
def test_the_console_list_shows_a_page_out_of_range_as_a_form_error(
    as_compliance: Any, value: str
) -> None:
    response = as_compliance.get("/audit/", {"page": value})
    assert response.status_code == 200
    assert response.context["filters"].errors["page"] == [PAGE_RULE]
    assert response.context["page"].number == 1


@pytest.mark.parametrize("name", ["since", "until"])
@pytest.mark.parametrize("value", EXTREME_DAYS)
def test_the_console_export_refuses_a_day_out_of_range_naming_it(
    as_compliance: Any, name: str, value: str
) -> None:
    response = as_compliance.get("/audit/export", {name: value})
    assert response.status_code == 400
    assert response.content.decode().startswith(f"{name}: ")


@pytest.mark.parametrize("value", ["9999-12-31", "0001-01-01", "9001-01-01"])
def test_the_dashboard_shows_a_day_out_of_range_as_a_form_error(
    as_compliance: Any, value: str
) -> None:
    response = as_compliance.get(
        "/audit/dashboard/", {"since": "2024-01-01", "until": value}
    )
    assert response.status_code == 200
    assert response.context["form"].errors["until"] == [DAY_RULE]
    assert response.context["board"] is None


def test_the_dashboard_refuses_a_first_day_out_of_range(as_compliance: Any) -> None:
    response = as_compliance.get("/audit/dashboard/", {"since": "9999-12-31"})
    assert response.context["form"].errors["since"] == [DAY_RULE]


@pytest.mark.parametrize("value", EXTREME_NUMBERS)
def test_a_tool_versions_at_parameter_out_of_range_is_ignored_not_a_500(
    as_compliance: Any, value: str
) -> None:
    url = "/audit/tools/default/get_weather/v1/"
    response = as_compliance.get(url, {"at": value})
    assert response.status_code == 404  # no such tool version; the page says so


@pytest.mark.parametrize(
    "url", ["/api/v1/tools/", "/api/v1/catalogs/", "/api/v1/jobs/", "/api/v1/clients/"]
)
@pytest.mark.parametrize("value", ["x", "0", "99999999999999999999"])
def test_every_api_list_refuses_a_page_that_is_no_page_number_naming_it(
    with_key: Any, url: str, value: str
) -> None:
    response = with_key("admin").get(url, {"page": value})
    assert fields(response) == ["page"]


def test_a_page_past_the_end_of_an_api_list_is_still_a_404(with_key: Any) -> None:
    response = with_key("admin").get("/api/v1/tools/", {"page": "5"})
    assert response.status_code == 404
