"""The console's first steps: a first-time admin landing on the tool list is shown
what to do (try a selection, connect an agent, add a source), each step ticked
from the installation's real state, until all are done or the panel is dismissed.
The tool list also says when a catalog's selections are ranked by words alone."""

from __future__ import annotations

import pytest

from catalog.models import Catalog
from sources.models import Source
from tests.factories import embed_now, make_client_key, make_tool, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_admin(client, admin_user):
    client.force_login(admin_user)
    return client


def steps(client) -> dict[str, str] | None:
    """Each step's key and whether it is done, or None when there is no panel."""
    html = client.get("/tools/").content.decode()
    if 'data-testid="first-steps"' not in html:
        return None
    found = {}
    for part in html.split('data-testid="first-step"')[1:]:
        key = part.split('data-step="')[1].split('"')[0]
        found[key] = part.split('data-done="')[1].split('"')[0]
    return found


def test_a_first_time_admin_sees_three_steps_none_done(as_admin):
    assert steps(as_admin) == {"select": "no", "agent": "no", "source": "no"}


def test_a_curator_or_a_member_is_not_shown_the_admins_steps(as_curator):
    assert steps(as_curator) is None


def test_each_step_is_ticked_from_real_state_and_the_panel_goes_when_all_are(
    as_admin,
):
    make_tool(name="get_weather", description="Current weather for a city.")
    as_admin.post("/try/", {"catalog": "default", "query": "weather in Oslo"})
    assert steps(as_admin) == {"select": "yes", "agent": "no", "source": "no"}

    make_client_key("my-agent", "agent")
    assert steps(as_admin)["agent"] == "yes"

    catalog = Catalog.objects.get(slug="default")
    Source.objects.create(catalog=catalog, name="demo", kind="stdio", stdio_name="demo")
    assert steps(as_admin)["source"] == "no"  # make run's demo server does not count
    Source.objects.create(catalog=catalog, name="weather", url="https://w.example/mcp")

    assert steps(as_admin) is None


def test_a_dismissed_panel_stays_gone_for_that_admin_only(as_admin, client):
    response = as_admin.post("/first-steps/dismiss/", headers={"HX-Request": "true"})

    assert response.status_code == 200 and response.content == b""
    assert steps(as_admin) is None
    client.force_login(make_user("second-admin", superuser=True))
    assert steps(client) is not None


def test_dismissing_needs_a_post(as_admin):
    assert as_admin.get("/first-steps/dismiss/").status_code == 405
    assert steps(as_admin) is not None


def test_the_tool_list_says_selections_are_ranked_by_words_until_embedded(
    as_member,
):
    make_tool(name="get_weather", description="Current weather for a city.")
    html = as_member.get("/tools/").content.decode()
    assert 'data-testid="words-only-notice"' in html
    assert "<code>default</code>" in html.split('data-testid="words-only-notice"')[1]

    embed_now(Catalog.objects.get(slug="default"))

    html = as_member.get("/tools/").content.decode()
    assert 'data-testid="words-only-notice"' not in html
