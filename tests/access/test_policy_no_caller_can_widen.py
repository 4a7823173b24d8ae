"""A request can only narrow what its caller may see; hiding is access control."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from catalog.services import create_catalog
from identity.models import ApiClient
from tests.factories import make_sample_catalog, make_tool, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog(db):
    return make_sample_catalog()


def select(client, **body):
    return client.post("/api/v1/select", body, format="json")


def test_a_client_without_the_unsafe_permission_cannot_ask_for_unsafe_tools(
    with_key, catalog
):
    agent = with_key("agent")
    response = select(agent, query="cancel the subscription", allow_unsafe=True)
    assert response.status_code == 403
    assert response.json()["detail"].startswith("allow_unsafe:")
    assert not AuditEvent.objects.filter(event_type="selection").exists()


def test_a_client_with_the_unsafe_permission_gets_unsafe_tools_when_it_asks(
    with_key, catalog
):
    trusted = with_key("agent", name="ops", allow_unsafe=True)
    response = select(trusted, query="delete the code repository", allow_unsafe=True)
    assert response.status_code == 200
    assert "delete_repository" in [t["name"] for t in response.json()["tools"]]


def test_tools_an_agent_could_never_be_offered_are_not_named_in_its_exclusions(
    with_key, catalog
):
    agent = with_key("agent", roles=["support"])
    body = select(agent, query="delete the repository or refund", explain=True).json()
    excluded = {e["name"] for e in body["excluded"]}
    assert "delete_repository" not in excluded
    assert "refund_payment" not in excluded
    assert body["stats"]["hidden"] == 2


def test_an_agent_cannot_list_read_or_export_tools_it_could_never_be_offered(
    with_key, catalog
):
    agent = with_key("agent", roles=["support"])
    listed = agent.get("/api/v1/tools/?q=delete").json()["results"]
    assert listed == []
    unsafe = catalog.tools.get(name="delete_repository")
    assert agent.get(f"/api/v1/tools/{unsafe.pk}/").status_code == 404
    assert agent.get(f"/api/v1/tools/{unsafe.pk}/history/").status_code == 404
    exported = agent.get("/api/v1/catalogs/default/export?format=openai").json()
    exported_names = {tool["function"]["name"] for tool in exported}
    assert "delete_repository" not in exported_names
    assert "refund_payment" not in exported_names
    assert "get_weather" in exported_names


def test_an_agents_catalog_counts_leave_out_tools_it_could_never_be_offered(
    with_key, catalog
):
    agent = with_key("agent", roles=["support"])
    counts = agent.get("/api/v1/catalogs/default/").json()
    assert counts["tool_count"] == 4  # six sample tools, less one unsafe, one finance
    curator = with_key("curator", name="cur")
    assert curator.get("/api/v1/catalogs/default/").json()["tool_count"] == 6


def test_an_agent_cannot_validate_a_call_to_a_tool_it_could_never_be_offered(
    with_key, catalog
):
    agent = with_key("agent")
    response = agent.post(
        "/api/v1/validate",
        {"tool": "delete_repository", "arguments": {"city": "x"}},
        format="json",
    )
    assert response.status_code == 404
    assert not AuditEvent.objects.filter(event_type="validation").exists()


def test_a_role_the_client_has_makes_its_tools_visible(with_key, catalog):
    finance = with_key("agent", name="finance-bot", roles=["finance"])
    listed = [
        t["name"] for t in finance.get("/api/v1/tools/?q=refund").json()["results"]
    ]
    assert listed == ["refund_payment"]


def test_a_person_without_the_unsafe_permission_does_not_see_unsafe_tools(
    as_user, catalog
):
    api = as_user(make_user("ann", groups=("support",)))
    names = [t["name"] for t in api.get("/api/v1/tools/").json()["results"]]
    assert "delete_repository" not in names
    assert "get_weather" in names


def test_the_admin_group_may_be_offered_unsafe_tools(as_user, catalog):
    from django.contrib.auth.models import Group, Permission

    admins = Group.objects.get_or_create(name="admin")[0]
    admins.permissions.add(Permission.objects.get(codename="use_unsafe_tools"))
    api = as_user(make_user("ada", groups=("admin",)))
    response = select(api, query="delete the code repository", allow_unsafe=True)
    assert response.status_code == 200
    assert "delete_repository" in [t["name"] for t in response.json()["tools"]]


# Catalog scoping -------------------------------------------------------------------


def test_a_client_limited_to_one_catalog_cannot_see_another(with_key, catalog):
    make_tool(create_catalog("alpha", "Alpha"), name="alpha_tool")
    scoped = with_key("agent", name="scoped", catalogs=["default"])
    slugs = [c["slug"] for c in scoped.get("/api/v1/catalogs/").json()["results"]]
    assert slugs == ["default"]
    assert scoped.get("/api/v1/catalogs/alpha/").status_code == 404
    response = select(scoped, catalog="alpha", query="anything")
    assert response.status_code == 404


def test_a_limited_curator_cannot_create_catalogs_or_learn_they_exist(with_key, db):
    create_catalog("alpha", "Alpha")
    curator = with_key("curator", name="scoped-curator", catalogs=["default"])
    for slug in ("alpha", "beta"):
        response = curator.post(
            "/api/v1/catalogs/", {"slug": slug, "name": slug}, format="json"
        )
        assert response.status_code == 403
        assert "alpha" not in response.json()["detail"]


def test_a_compliance_key_limited_to_a_catalog_reads_only_its_audit_rows(
    with_key, catalog
):
    create_catalog("alpha", "Alpha")
    agent = with_key("agent", name="any-agent")
    select(agent, query="weather in Paris")
    compliance = with_key("compliance", name="auditor", catalogs=["alpha"])
    rows = compliance.get("/api/v1/audit/").json()["results"]
    assert {row["catalog_slug"] for row in rows} == {"alpha"}
    everyone = with_key("compliance", name="auditor-all")
    assert everyone.get("/api/v1/audit/").json()["results"]


def test_a_person_limited_to_a_catalog_sees_only_it_in_the_console(client, catalog):
    from identity.models import UserCatalogAccess

    create_catalog("alpha", "Alpha")
    person = make_user("pat", groups=("curator",))
    UserCatalogAccess.objects.create(user=person, catalogs=["alpha"])
    client.force_login(person)
    assert client.get("/catalogs/default/").status_code == 404
    page = client.get("/tools/").content.decode()
    assert "get_weather" not in page


# Keys ------------------------------------------------------------------------------


def test_a_deactivated_owners_key_stops_working(with_key, api, catalog):
    from identity.services.clients import create_api_client

    owner = make_user("olga", groups=("admin",))
    _client, key = create_api_client("olga-bot", "agent", catalogs="*", actor=owner)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert select(api, query="weather").status_code == 200
    owner.is_active = False
    owner.save(update_fields=["is_active"])
    response = select(api, query="weather")
    assert response.status_code in (401, 403)
    assert "deactivated" in response.json()["detail"]


def test_an_expired_key_stops_working(api, catalog):
    from datetime import timedelta

    from django.utils import timezone

    from identity.services.clients import create_api_client

    past = timezone.now() - timedelta(minutes=1)
    _client, key = create_api_client("old-bot", "agent", catalogs="*", expires=past)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    response = select(api, query="weather")
    assert response.status_code in (401, 403)
    assert "expired" in response.json()["detail"]


def test_admins_create_list_rotate_and_revoke_keys_and_each_is_audited(
    with_key, api, catalog
):
    admin = with_key("admin", name="root-key")
    made = admin.post(
        "/api/v1/clients/",
        {"name": "bot", "scope": "agent", "roles": ["support"], "catalogs": "*"},
        format="json",
    )
    assert made.status_code == 201, made.json()
    first_key, client_id = made.json()["key"], made.json()["id"]
    listed = [c["name"] for c in admin.get("/api/v1/clients/").json()["results"]]
    assert "bot" in listed
    rotated = admin.post(f"/api/v1/clients/{client_id}/rotate").json()
    assert rotated["key"] != first_key
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {first_key}")
    assert select(api, query="weather").status_code in (401, 403)
    admin = with_key("admin", name="root-key-2")
    revoked = admin.post(f"/api/v1/clients/{client_id}/revoke").json()
    assert revoked["revoked"] is True
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {rotated['key']}")
    assert select(api, query="weather").status_code in (401, 403)
    kinds = [
        event.event_type
        for event in AuditEvent.objects.order_by("id")
        if event.output.get("client_id") == client_id
    ]
    assert kinds == ["client_created", "client_rotated", "client_revoked"]


def test_only_admins_manage_keys(with_key, db):
    curator = with_key("curator", name="cur")
    response = curator.post(
        "/api/v1/clients/", {"name": "x", "scope": "admin"}, format="json"
    )
    assert response.status_code == 403
    assert not ApiClient.objects.filter(name="x").exists()


def test_a_fresh_install_has_the_curator_compliance_and_admin_groups(db):
    from django.contrib.auth.models import Group

    names = set(Group.objects.values_list("name", flat=True))
    assert {"curator", "compliance", "admin"} <= names


# Selection ids ---------------------------------------------------------------------


def test_every_answer_gets_its_own_server_generated_selection_id(with_key, catalog):
    agent = with_key("agent")
    request_id = "8a2c1c52-9d55-4b4c-9a51-0f3ad0b1e7c4"
    one = agent.post(
        "/api/v1/select",
        {"query": "weather"},
        format="json",
        HTTP_X_REQUEST_ID=request_id,
    ).json()
    two = agent.post(
        "/api/v1/select",
        {"query": "weather"},
        format="json",
        HTTP_X_REQUEST_ID=request_id,
    ).json()
    assert one["selection_id"] != two["selection_id"]
    assert one["request_id"] == two["request_id"] == request_id
    batch = agent.post(
        "/api/v1/select/batch",
        {"requests": [{"query": "weather"}, {"query": "weather"}]},
        format="json",
    ).json()["results"]
    assert batch[0]["selection_id"] != batch[1]["selection_id"]
    recorded = set(
        AuditEvent.objects.filter(event_type="selection").values_list(
            "selection_id", flat=True
        )
    )
    assert {str(x) for x in recorded} >= {one["selection_id"], two["selection_id"]}


def test_creating_a_catalog_is_an_audit_event_naming_who_did_it(with_key, db):
    curator = with_key("curator", name="cur")
    response = curator.post(
        "/api/v1/catalogs/", {"slug": "beta", "name": "Beta"}, format="json"
    )
    assert response.status_code == 201
    event = AuditEvent.objects.get(event_type="catalog_created")
    assert (event.catalog_slug, event.actor_name) == ("beta", "api:cur")
