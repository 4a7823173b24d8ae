"""GET /healthz"""

from __future__ import annotations

import pytest

from tests.conftest import start_worker, stop_worker
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_admin(client):
    client.force_login(make_user("root", superuser=True))
    return client


def test_it_answers_503_naming_the_worker_when_none_runs(as_admin, purged_broker):
    response = as_admin.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["down"] == ["worker"]
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["pgvector"]["version"]
    assert body["checks"]["broker"]["ok"] is True


@pytest.mark.integration
def test_it_answers_200_when_every_part_is_up(as_admin, celery_worker):
    response = as_admin.get("/healthz")
    assert response.status_code == 200, response.json()
    assert response.json()["checks"]["worker"]["workers"]


def test_it_names_the_broker_when_redis_is_unreachable(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    response = client.get("/healthz")
    assert response.status_code == 503
    assert "broker" in response.json()["down"]


def test_an_anonymous_caller_learns_only_up_or_down_per_part(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    body = client.get("/healthz").json()
    assert body["checks"] == {
        "database": {"ok": True},
        "pgvector": {"ok": True},
        "broker": {"ok": False},
        "worker": {"ok": False},
    }
    assert "127.0.0.1" not in str(body)


@pytest.mark.integration
def test_an_anonymous_caller_never_sees_worker_host_names(client, celery_worker):
    body = client.get("/healthz").json()
    assert body["checks"]["worker"] == {"ok": True}


def test_a_member_gets_the_public_answer(as_member, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    body = as_member.get("/healthz").json()
    assert body["checks"]["broker"] == {"ok": False}


def test_an_admin_gets_the_error_text(as_admin, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    body = as_admin.get("/healthz").json()
    assert body["checks"]["broker"]["error"]
    assert body["checks"]["pgvector"]["version"]


def test_an_admin_key_gets_the_details_and_an_agent_key_does_not(with_key, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    admin = with_key("admin")
    assert admin.get("/healthz").json()["checks"]["broker"]["error"]
    agent = with_key("agent")
    assert agent.get("/healthz").json()["checks"]["broker"] == {"ok": False}


def test_an_unknown_key_gets_the_public_answer_not_an_error(api, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    api.credentials(HTTP_AUTHORIZATION="Bearer qv_nope_nope")
    response = api.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["broker"] == {"ok": False}


@pytest.mark.integration
def test_it_names_a_queue_no_worker_consumes(as_admin, transactional_db, purged_broker):
    worker = start_worker("imports-only", queues="quiver")
    try:
        body = as_admin.get("/healthz").json()
    finally:
        stop_worker(worker)
    assert body["down"] == ["worker"]
    assert (
        "no worker consumes the queue(s) learning" in body["checks"]["worker"]["error"]
    )


def test_the_web_part_alone_answers_while_shared_parts_are_down(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    response = client.get("/healthz?parts=web")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "down": [],
        "checks": {"web": {"ok": True}},
    }


def test_the_web_part_asks_nothing_of_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert client.get("/healthz?parts=web").status_code == 200


def test_named_parts_are_the_only_ones_checked(client, settings, purged_broker):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    body = client.get("/healthz?parts=database,pgvector").json()
    assert body == {
        "status": "ok",
        "down": [],
        "checks": {"database": {"ok": True}, "pgvector": {"ok": True}},
    }


def test_a_named_part_that_is_down_is_a_503_naming_it(client, purged_broker):
    response = client.get("/healthz?parts=worker")
    assert response.status_code == 503
    assert response.json()["down"] == ["worker"]


def test_the_whole_answer_leaves_the_web_part_out(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    assert "web" not in client.get("/healthz").json()["checks"]


@pytest.mark.parametrize("parts", ["", "disk", "web,disk", ",,"])
def test_an_unknown_or_empty_part_is_a_400_naming_parts(client, parts):
    response = client.get(f"/healthz?parts={parts}")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid"
    rule = "a comma-separated list of database, pgvector, broker, worker, web"
    assert body["fields"] == {"parts": [rule]}
    assert body["detail"] == f"parts: {rule}"


def test_embeddings_pending_are_told_per_catalog_to_an_admin_and_never_a_503(
    as_admin, settings
):
    from catalog.models import Catalog
    from tests.factories import make_tool

    make_tool(name="send_email")
    Catalog.objects.create(slug="empty", name="Empty")

    body = as_admin.get("/healthz").json()

    assert body["embeddings"] == {
        "ready": False,
        "pending": 1,
        "catalogs": [
            {"catalog": "default", "pending": 1, "words_only": True},
            {"catalog": "empty", "pending": 0, "words_only": False},
        ],
    }
    assert "embeddings" not in body["down"]


def test_a_stranger_learns_only_whether_the_embeddings_are_ready(client):
    from catalog.models import Catalog
    from tests.factories import embed_now, make_tool

    make_tool(name="send_email")
    assert client.get("/healthz").json()["embeddings"] == {"ready": False}

    embed_now(Catalog.objects.get(slug="default"))

    assert client.get("/healthz").json()["embeddings"] == {"ready": True}
