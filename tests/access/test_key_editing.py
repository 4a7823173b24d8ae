"""The keys page edits a key's roles, catalogs, unsafe permission and rate limit
through change_api_client (never bigger than the editor; audited as
client_changed), searches and pages the keys, and offers no rotation of an
expired key."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from catalog.services import create_catalog
from config.pages import PAGE_SIZE
from identity.models import ApiClient, UserCatalogAccess
from identity.services.clients import rotate_api_client
from tests.factories import make_client_key, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_admin(client):
    client.force_login(make_user("root", superuser=True))
    return client


@pytest.fixture
def bot(db) -> ApiClient:
    make_client_key("support-bot", "agent", roles=["support"])
    return ApiClient.objects.get(name="support-bot")


def edit(client, key: ApiClient, **fields):
    body = {"roles": "support", "all_catalogs": "on"} | fields
    return client.post(f"/keys/{key.pk}/edit/", body)


def changed_events() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(event_type="client_changed"))


def test_the_edit_form_shows_the_key_as_it_is(as_admin, bot):
    page = as_admin.get(f"/keys/{bot.pk}/edit/").content.decode()
    assert 'data-testid="edit-key"' in page
    assert 'value="support"' in page
    assert re.search(r'<input type="checkbox" name="all_catalogs"[^>]* checked', page)
    assert not re.search(r'name="allow_unsafe"[^>]* checked', page)


def test_an_admin_edits_roles_catalogs_unsafe_and_limit_in_one_audited_change(
    as_admin, bot
):
    create_catalog("ops", "Ops")
    response = edit(
        as_admin,
        bot,
        roles="support, billing",
        all_catalogs="",
        catalogs="ops",
        allow_unsafe="on",
        rate_limit_per_minute="30",
    )
    assert response.status_code == 302
    bot.refresh_from_db()
    assert bot.roles == ["support", "billing"]
    assert (bot.all_catalogs, bot.catalogs) == (False, ["ops"])
    assert (bot.allow_unsafe, bot.rate_limit_per_minute) == (True, 30)
    [event] = changed_events()
    assert event.input["before"]["catalogs"] == "*"
    assert event.output["after"]["catalogs"] == ["ops"]
    assert event.actor_name == "root"


def test_an_unchanged_edit_records_nothing(as_admin, bot):
    assert edit(as_admin, bot).status_code == 302
    assert changed_events() == []


def test_an_empty_catalog_choice_is_refused_with_a_message(as_admin, bot):
    response = edit(as_admin, bot, all_catalogs="", catalogs="")
    assert response.status_code == 400
    assert "catalogs: name the catalogs" in response.content.decode()
    bot.refresh_from_db()
    assert bot.all_catalogs is True
    assert changed_events() == []


def test_ticking_every_catalog_and_naming_some_is_refused(as_admin, bot):
    response = edit(as_admin, bot, catalogs="default")
    assert response.status_code == 400
    assert "not both" in response.content.decode()


def test_an_unknown_catalog_is_refused_naming_it(as_admin, bot):
    response = edit(as_admin, bot, all_catalogs="", catalogs="nowhere")
    assert response.status_code == 400
    assert "unknown catalog" in response.content.decode()
    assert changed_events() == []


@pytest.fixture
def limited_admin(client, db):
    create_catalog("other", "Other")
    person = make_user("lim", groups=("admin",))
    UserCatalogAccess.objects.create(user=person, catalogs=["other"])
    client.force_login(person)
    return client


def test_a_limited_admin_cannot_edit_a_key_into_one_bigger_than_themselves(
    limited_admin,
):
    make_client_key("other-bot", "agent", catalogs=["other"])
    key = ApiClient.objects.get(name="other-bot")
    response = edit(limited_admin, key)  # every catalog: more than "other"
    assert response.status_code == 403
    assert "catalogs:" in response.content.decode()
    key.refresh_from_db()
    assert (key.all_catalogs, key.catalogs) == (False, ["other"])
    assert changed_events() == []


def test_a_limited_admin_cannot_open_or_edit_a_key_bigger_than_themselves(
    limited_admin, bot
):
    assert limited_admin.get(f"/keys/{bot.pk}/edit/").status_code == 404
    assert edit(limited_admin, bot, roles="").status_code == 404
    bot.refresh_from_db()
    assert bot.roles == ["support"]


def test_a_revoked_key_cannot_be_edited(as_admin, bot):
    ApiClient.objects.filter(pk=bot.pk).update(revoked=True)
    assert edit(as_admin, bot, roles="x").status_code == 404


def test_a_curator_cannot_edit_keys(as_curator, bot):
    assert edit(as_curator, bot, roles="x").status_code == 403


def test_the_search_finds_keys_by_name_prefix_scope_or_role(as_admin, bot):
    make_client_key("billing-script", "curator", roles=["finance"])
    script = ApiClient.objects.get(name="billing-script")

    def found(q: str) -> set[str]:
        page = as_admin.get("/keys/", {"q": q}).content.decode()
        return {n for n in ("support-bot", "billing-script") if f'"{n}"' in page}

    assert found("SUPPORT") == {"support-bot"}
    assert found(f"qv_{script.key_prefix}") == {"billing-script"}
    assert found("curator") == {"billing-script"}
    assert found("finance") == {"billing-script"}
    assert found("nothing-like-it") == set()
    assert "No key matches" in as_admin.get("/keys/?q=zzz").content.decode()


def test_the_keys_are_paged_and_the_pager_keeps_the_search(as_admin):
    for i in range(PAGE_SIZE + 2):
        make_client_key(f"bot-{i:03d}", "agent")
    first = as_admin.get("/keys/", {"q": "bot-"}).content.decode()
    assert first.count("data-client=") == PAGE_SIZE
    assert "q=bot-&amp;page=2" in first
    second = as_admin.get("/keys/", {"q": "bot-", "page": 2}).content.decode()
    assert second.count("data-client=") == 2


def test_an_expired_key_offers_no_rotation_and_refuses_one(as_admin, bot):
    past = timezone.now() - timedelta(days=1)
    ApiClient.objects.filter(pk=bot.pk).update(expires=past)
    page = as_admin.get("/keys/").content.decode()
    row = page.split('data-client="support-bot"')[1].split("</tr>")[0]
    assert "expired" in row
    assert "/rotate/" not in row
    assert "/edit/" in row
    response = as_admin.post(f"/keys/{bot.pk}/rotate/")
    assert response.status_code == 400
    assert "expired key cannot be rotated" in response.content.decode()
    with pytest.raises(Exception, match="expires:"):
        rotate_api_client(bot, actor=None)
    assert not AuditEvent.objects.filter(event_type="client_rotated").exists()


def test_a_live_key_still_offers_rotation(as_admin, bot):
    page = as_admin.get("/keys/").content.decode()
    row = page.split('data-client="support-bot"')[1].split("</tr>")[0]
    assert "/rotate/" in row


def test_saving_an_edit_goes_back_to_the_list_as_it_was_searched(as_admin, bot):
    body = {"roles": "support", "all_catalogs": "on", "rate_limit_per_minute": "9"}
    response = as_admin.post(f"/keys/{bot.pk}/edit/?q=supp", body)
    assert response.status_code == 302
    assert response["Location"] == "/keys/?q=supp"
