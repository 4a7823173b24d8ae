"""A key bound to the person it acts for: it holds its own grant within what the
person holds at each request, stops with the person, names them in every audit
row, and only someone who may act for that person can bind it. ``acting_person``
answers whose agent a caller is."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import call_command

from audit.models import AuditEvent
from catalog.services.catalogs import create_catalog
from identity.access import access_for, acting_person
from identity.models import ApiClient, UserCatalogAccess
from identity.services.clients import create_api_client
from tests.factories import make_tool, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice():
    return make_user("alice", groups=("support",))


def bound_key(person, **options):
    options.setdefault("catalogs", "*")
    options.setdefault("roles", ["support", "billing"])
    client, key = create_api_client("alice-bot", "agent", person=person, **options)
    return client, key


def test_a_bound_key_holds_no_more_than_its_person_and_shrinks_with_them(alice):
    create_catalog("billing", "Billing", actor=None)
    client, _key = bound_key(alice, allow_unsafe=True)
    access = access_for(ApiClient.objects.get(pk=client.pk).user)
    assert access.roles == ("support",)  # billing is the key's, not alice's
    assert access.allow_unsafe is False  # alice may not be offered unsafe tools
    assert access.catalogs is None
    UserCatalogAccess.objects.create(user=alice, catalogs=["billing"])
    alice.groups.remove(Group.objects.get(name="support"))
    access = access_for(ApiClient.objects.get(pk=client.pk).user)
    assert access.catalogs == ("billing",)
    assert access.roles == ()


def test_a_bound_key_stops_when_its_person_is_deactivated_or_deleted(alice, api):
    _client, key = bound_key(alice)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert api.get("/api/v1/tools/").status_code == 200
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    answer = api.get("/api/v1/tools/")
    assert answer.status_code == 401
    assert "acting for a deactivated person" in answer.json()["detail"]
    alice.delete()
    answer = api.get("/api/v1/tools/")
    assert "acting for a deleted person" in answer.json()["detail"]


def test_every_row_a_bound_key_writes_names_its_person(alice, api):
    make_tool(name="get_weather", description="Current weather for a city.")
    client, key = bound_key(alice)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert (
        api.post("/api/v1/select", {"query": "weather"}, format="json").status_code
        == 200
    )
    row = AuditEvent.objects.get(event_type="selection")
    assert row.input["acting_for"] == {
        "person": "alice",
        "person_id": alice.pk,
        "key": "alice-bot",
        "key_id": client.pk,
    }
    assert "oauth_client" not in row.input["acting_for"]


def test_acting_person_answers_whose_agent_a_caller_is(alice):
    bound, _ = bound_key(alice)
    free, _ = create_api_client("free-bot", "agent", catalogs="*")
    assert acting_person(alice) == alice
    assert acting_person(ApiClient.objects.get(pk=bound.pk).user) == alice
    assert acting_person(ApiClient.objects.get(pk=free.pk).user) is None
    assert acting_person(None) is None
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    assert acting_person(ApiClient.objects.get(pk=bound.pk).user) is None


def test_a_person_binds_a_key_to_themself_but_not_to_someone_they_do_not_manage(alice):
    make_user("root", superuser=True)
    curator = make_user("carla", groups=("curator",))
    admin = make_user("ada", groups=("admin",))
    with pytest.raises(PermissionDenied, match="person"):
        create_api_client(
            "x",
            "agent",
            catalogs="*",
            person=make_user("root2", superuser=True),
            actor=admin,
        )
    client, _ = create_api_client(
        "mine", "agent", catalogs="*", person=curator, actor=curator
    )
    assert client.person == curator
    client, _ = create_api_client(
        "for-alice", "agent", catalogs="*", person=alice, actor=admin
    )
    assert client.person == alice


def test_a_key_made_by_a_bound_key_acts_for_the_same_person(alice):
    parent, _ = create_api_client(
        "parent", "admin", catalogs="*", person=make_user("ada", groups=("admin",))
    )
    maker = ApiClient.objects.get(pk=parent.pk).user
    child, _ = create_api_client("child", "agent", catalogs="*", actor=maker)
    assert child.person_name == "ada"
    with pytest.raises(PermissionDenied, match="person"):
        create_api_client("other", "agent", catalogs="*", actor=maker, person=alice)


def test_a_key_is_bound_only_to_an_active_person(alice):
    free, _ = create_api_client("free-bot", "agent", catalogs="*")
    with pytest.raises(ValidationError, match="person"):
        create_api_client("x", "agent", catalogs="*", person=free.user)
    alice.is_active = False
    with pytest.raises(ValidationError, match="person"):
        create_api_client("y", "agent", catalogs="*", person=alice)


def test_the_command_and_the_api_bind_a_key_by_username(alice, as_user, capsys):
    call_command(
        "create_api_client", "cmd-bot", "--scope", "agent", "--all-catalogs",
        "--person", "alice",
    )  # fmt: skip
    assert ApiClient.objects.get(name="cmd-bot").person == alice
    api = as_user(make_user("root", superuser=True))
    answer = api.post(
        "/api/v1/clients/",
        {"name": "api-bot", "scope": "agent", "catalogs": "*", "person": "alice"},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    assert answer.json()["person"] == "alice"
    answer = api.post(
        "/api/v1/clients/",
        {"name": "api-bot2", "scope": "agent", "catalogs": "*", "person": "nobody"},
        format="json",
    )
    assert answer.status_code == 400
    assert "person" in answer.json()["detail"]


def test_oauth_connections_are_no_keys_to_list_or_use(alice, as_user):
    from tests.oauth_flow import connect

    connection = connect(alice, roles=("support",))
    api = as_user(make_user("root", superuser=True))
    names = [key["name"] for key in api.get("/api/v1/clients/").json()["results"]]
    assert connection.principal.name not in names
    pk = connection.principal.pk
    assert api.post(f"/api/v1/clients/{pk}/rotate/").status_code == 404


def test_a_person_never_decides_a_request_of_an_agent_acting_for_them(alice):
    """A key an admin bound to alice, and alice's OAuth connection, ask for
    approvals in her name: she may not approve them, as her own."""
    from types import SimpleNamespace

    from identity.access import is_own_request, own_requesters
    from tests.oauth_flow import connect

    admin = make_user("ada", groups=("admin",))
    client, _ = create_api_client(
        "for-alice", "agent", catalogs="*", person=alice, actor=admin
    )
    asked = SimpleNamespace(requested_by_id=client.user_id)
    assert is_own_request(alice, asked)
    assert not is_own_request(make_user("bob"), asked)
    assert client.user_id in own_requesters(alice)
    connection = connect(alice)
    asked = SimpleNamespace(requested_by_id=connection.principal.user_id)
    assert is_own_request(alice, asked)
