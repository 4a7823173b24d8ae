"""The checks of an endpoint's contract (tests/access/endpoint_contracts.py),
made against one world of objects (tests/access/endpoint_world.py) built once
per test class; tests/access/test_every_endpoint.py and
tests/access/test_every_console_page.py make one test per operation."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any
from unittest import mock

from django.apps import apps
from django.db import connection
from django.test import Client, TestCase, override_settings
from django.urls import reverse
from rest_framework.test import APIClient

from audit.models import AuditEvent
from config import ratelimit
from identity.models import ApiClient
from tests.access.endpoint_contracts import CONTRACTS, Contract, Other, Read, Write
from tests.access.endpoint_world import World, build_world
from tests.access.endpoints import Operation, operations

APPS = {"auth", "catalog", "selection", "sources", "calls", "notify", "learning"}
APPS |= {"sso", "vault"}
REFUSED = (401, 403)
HIDDEN = (403, 404)
# Columns a request may touch without changing anything (when a key was used).
VOLATILE = ("last_used", "last_login")
FAST_HASHER = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def fingerprint() -> list[tuple[str, str]]:
    """Every row of every table a request could change (the audit log by its
    count: readers seal it; a key's last use left out), one digest per table."""
    parts = ["SELECT 'audit', count(*)::text FROM audit_auditevent"]
    for model in apps.get_models():
        if model._meta.app_label not in APPS or not model._meta.managed:
            continue
        table = connection.ops.quote_name(model._meta.db_table)
        row = f"(to_jsonb(t) - '{{{','.join(VOLATILE)}}}'::text[])::text"
        parts.append(
            f"SELECT '{model._meta.db_table}', md5(coalesce(string_agg({row}, "
            f"'|' ORDER BY {row}), '')) FROM {table} t"
        )
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts))
        return sorted(cursor.fetchall())


def text_of(response: Any) -> str:
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


@override_settings(PASSWORD_HASHERS=FAST_HASHER, QUIVER_RATE_LIMIT_PER_MINUTE=1)
class ContractChecks(TestCase):
    world: World

    @classmethod
    def setUpTestData(cls) -> None:
        cls.world = build_world()
        ApiClient.objects.filter(pk__in=cls.world.key_ids.values()).update(
            rate_limit_per_minute=1
        )

    def setUp(self) -> None:
        counter = ratelimit.Counter()
        counter._redis_down_until = float("inf")  # counted here, never in Redis
        for name, value in (("COUNTER", counter), ("clock", lambda: 1.8e9 + 10)):
            patcher = mock.patch.object(ratelimit, name, value)
            patcher.start()
            self.addCleanup(patcher.stop)

    def caller(self, persona: str | None, api: bool) -> Any:
        client: Any = APIClient() if api else Client()
        if persona is None:
            return client
        if api and persona in self.world.keys:
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {self.world.keys[persona]}")
        else:
            from django.contrib.auth import get_user_model

            client.force_login(
                get_user_model().objects.get(pk=self.world.people[persona])
            )
        return client

    def send(self, client: Any, op: Operation, contract: Any, rid: str = "") -> Any:
        ids = self.world.ids
        url = reverse(op.name, kwargs={k: ids[v] for k, v in contract.args.items()})
        url += f"?{contract.query.format(**ids)}" if contract.query else ""
        body = getattr(contract, "body", None)
        body = body(ids) if callable(body) else body
        extra = {"HTTP_X_REQUEST_ID": rid} if rid else {}
        method = getattr(client, op.method.lower())
        if isinstance(client, APIClient) and body is not None:
            return method(url, body, format="json", **extra)
        return (
            method(url, body or {}, **extra)
            if op.method == "POST"
            else method(url, **extra)
        )

    def refused(
        self, op: Operation, persona: str | None, expected: tuple, login: bool = True
    ) -> None:
        """The operation by ``persona`` (None: signed out) answers ``expected``
        (signed out, the sign-in page too)."""
        client = self.caller(persona, op.route.startswith("api/"))
        response = self.send(client, op, CONTRACTS[str(op)])
        if response.status_code == 302 and persona is None and login:
            assert response["Location"].startswith("/login/"), (str(op), response)
            return
        assert response.status_code in expected, (
            str(op),
            persona,
            response.status_code,
            text_of(response)[:300],
        )

    def check_write(self, op: Operation, contract: Write) -> None:
        with override_settings(QUIVER_RATE_LIMIT_PER_MINUTE=contract.cost):
            self.try_write(op, contract)

    def try_write(self, op: Operation, contract: Write) -> None:
        start = fingerprint()
        self.refused(op, None, REFUSED)
        outsider = f"{contract.who}-out" if contract.scoped else contract.outsider
        assert outsider or contract.anyone, f"{op}: name who is refused"
        if outsider:
            self.refused(op, outsider, contract.hidden)
        assert fingerprint() == start, f"{op} refused changed something"
        client = self.caller(contract.who, op.route.startswith("api/"))
        rid = str(uuid.uuid4())
        response = self.send(client, op, contract, rid)
        assert response.status_code in contract.ok, (
            str(op),
            response.status_code,
            text_of(response)[:500],
        )
        kinds = set(
            AuditEvent.objects.filter(request_id=rid).values_list(
                "event_type", flat=True
            )
        )
        if contract.audit is None:
            assert not kinds, f"{op} writes {kinds}: name its event in the contract"
        else:
            assert contract.audit in kinds, (str(op), kinds)
        written = fingerprint()
        again = self.send(client, op, contract, str(uuid.uuid4()))
        assert again.status_code == 429, (str(op), again.status_code)
        assert fingerprint() == written, f"{op} past the limit changed something"

    def check_read(self, op: Operation, contract: Read) -> None:
        if contract.public:  # one request: anyone may
            response = self.send(self.caller(None, False), op, contract)
            assert response.status_code in contract.ok, (str(op), response)
            return
        self.refused(op, None, REFUSED)
        outsider = f"{contract.who}-out" if contract.scoped else contract.outsider
        if outsider and contract.hides:
            seen = self.send(
                self.caller(outsider, op.route.startswith("api/")), op, contract
            )
            assert seen.status_code == 200, (str(op), seen.status_code)
            assert contract.hides not in text_of(seen), (
                f"{op} shows an outsider {contract.hides}"
            )
        elif outsider:
            self.refused(op, outsider, HIDDEN)
        response = self.send(
            self.caller(contract.who, op.route.startswith("api/")), op, contract
        )
        assert response.status_code in contract.ok, (
            str(op),
            response.status_code,
            text_of(response)[:300],
        )

    def check_other(self, op: Operation, contract: Other) -> None:
        if not contract.anonymous:
            return
        if op.name == "admin:*":
            response = Client().get("/admin/")
            assert response.status_code == 302 and "login" in response["Location"]
            return
        start = fingerprint()
        self.refused(op, None, contract.anonymous, login=False)
        assert fingerprint() == start, f"{op} signed out changed something"


def _test(op: Operation) -> Callable[[ContractChecks], None]:
    def test(self: ContractChecks) -> None:
        contract: Contract = CONTRACTS[str(op)]
        if isinstance(contract, Write):
            self.check_write(op, contract)
        elif isinstance(contract, Read):
            self.check_read(op, contract)
        else:
            self.check_other(op, contract)

    test.__doc__ = f"{op} keeps its contract"
    return test


def add_tests(cls: type[ContractChecks], wanted: Callable[[Operation], bool]) -> None:
    """One test method on ``cls`` per classified operation it ``wanted``."""
    for op in operations()[0]:
        if str(op) in CONTRACTS and wanted(op):
            name = f"test_{op.method}_{op.name}".replace(":", "_").replace("-", "_")
            setattr(cls, name.replace("*", "any").lower(), _test(op))
