"""The demo catalog's everyday requests: the tool the engine offers first for each.

The demo catalog (``catalog/demo/demo_catalog.json``) is what ``make run`` loads
and what the README's tour asks. Its tools are embedded by the bundled MiniLM in
process, as the app holds the vectors of a catalog this size, and each request
gets the semantic pool the app computes; no database. Every request asks for
the ranking as an admin's Try it does (unsafe tools included, ``min_score`` 0).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from catalog.embeddings.backends import LocalMiniLMBackend, get_local_backend
from catalog.embeddings.text import embedding_text
from catalog.spec import spec_from_dict
from selection.engine import (
    CatalogSnapshot,
    SelectionRequest,
    SelectionResult,
    record_from_dict,
    select,
)
from selection.engine.index import EXAMPLE_SHARE
from selection.engine.normalize import normalize
from selection.engine.sentences import split_sentences
from selection.engine.vectors import VectorTable, unit_rows

DEMO_PATH = Path(__file__).resolve().parents[3] / "catalog/demo/demo_catalog.json"
HEADLINE = "email the quarterly report to Dana"

# Everyday requests a newcomer types, each with the tool it wants.
EVERYDAY = [
    (HEADLINE, "send_email"),
    ("email the signed contract to legal@acme.com", "send_email"),
    ("send an email to a colleague", "send_email"),
    ("will it snow in Denver tomorrow?", "get_weather_forecast"),
    ("what time is it now in Tokyo", "get_timezone"),
    ("what's inside the Q3 folder on the drive", "list_files"),
    ("book a meeting with the design team on Friday at 3", "create_calendar_event"),
    ("share the roadmap with dana@acme.com", "share_file"),
    ("post in #general that lunch is here", "post_chat_message"),
    ("refund the customer's last payment", "refund_payment"),
    ("cancel my hotel booking in Lisbon", "cancel_booking"),
    ("find flights from Boston to Chicago next Monday", "search_flights"),
    ("run the monthly churn report", "run_saved_report"),
    ("who does Priya report to?", "get_employee_profile"),
    ("open a bug for the broken login page in acme/web-app", "create_issue"),
    ("merge pull request 17", "merge_pull_request"),
    ("deploy billing-service 1.2 to production", "deploy_service"),
    ("roll back the last deploy of checkout-api", "rollback_deployment"),
    ("how many vacation days do I have left?", "get_time_off_balance"),
    ("translate this paragraph into Spanish", "translate_text"),
    ("summarize this long PDF contract", "summarize_document"),
    ("where is my package?", "track_shipment"),
    ("create an invoice for Globex for 10 hours of work", "create_invoice"),
    ("add Jane from Initech as a new contact", "create_contact"),
    ("search the web for Python 3.13 release notes", "web_search"),
    ("delete the old backups folder", "delete_file"),
    ("draft a reply to the landlord but don't send it yet", "draft_email"),
    ("show me the errors in checkout-api logs from the last hour", "tail_service_logs"),
]
# Written with the list above and still ranked wrong (bench/README.md, "The
# headline request"): the wanted tool and the rank it is held to.
KNOWN_MISSES = [
    # MiniLM puts the forecast nearer; only "weather" is a word both share.
    ("what's the weather in Paris", "get_current_weather", 2),
    # "text" is also text_to_sql's name; "minutes" and "late" are other tools'.
    ("text Dana that I'm running ten minutes late", "send_sms", 5),
]


@dataclass(frozen=True)
class Demo:
    snapshot: CatalogSnapshot
    table: VectorTable
    backend: LocalMiniLMBackend

    def ask(self, text: str) -> SelectionResult:
        """The ranking for ``text``, the semantic pool as the app computes it."""
        request = SelectionRequest(
            query=text, max_candidates=5, min_score=0.0, allow_unsafe=True
        )
        embed = normalize(request).embed_text
        vector = self.backend.embed_query(embed)
        parts = split_sentences(embed)
        sentences = np.zeros((len(parts), len(vector)), dtype=np.float32)
        for at, part in enumerate(parts):
            sentences[at] = self.backend.embed_query(part)
        pool_size = self.snapshot.settings.candidate_pool
        rows = self.table.nearest_mixed(vector, sentences, pool_size)
        pool = self.snapshot.named_pool(rows)
        return select(self.snapshot, request, semantic=pool, vector=vector)


@pytest.fixture(scope="module")
def demo() -> Demo:
    data = json.loads(DEMO_PATH.read_text(encoding="utf-8"))
    specs = [spec_from_dict(tool) for tool in data["tools"]]
    backend = get_local_backend()
    vectors = backend.embed_documents([embedding_text(spec) for spec in specs])
    table = VectorTable(backend.model_id, unit_rows(vectors), np.ones(len(specs), bool))
    records = tuple(
        record_from_dict(spec.to_dict(), row, row) for row, spec in enumerate(specs)
    )
    snapshot = CatalogSnapshot("default", "1", records, vectors=table).warm()
    return Demo(snapshot, table, backend)


@pytest.mark.parametrize(("text", "expected"), EVERYDAY)
def test_an_everyday_request_offers_its_tool_first(
    demo: Demo, text: str, expected: str
) -> None:
    assert demo.ask(text).names[0] == expected


@pytest.mark.parametrize(("text", "expected", "rank"), KNOWN_MISSES)
def test_a_known_miss_still_offers_its_tool_near_the_top(
    demo: Demo, text: str, expected: str, rank: int
) -> None:
    assert expected in demo.ask(text).names[:rank]


def test_the_headline_request_counts_the_example_and_not_its_recipient(
    demo: Demo,
) -> None:
    answer = demo.ask(HEADLINE)
    first, second = answer.tools[0], answer.tools[1]
    assert (first.name, second.name) == ("send_email", "run_saved_report")
    # send_email's example "email the Q3 report to finance@acme.com" adds
    # "report" (at half a description word) to "email"; "Dana", named only in
    # other tools' examples, counts for none of them.
    assert first.signals["lexical"] == pytest.approx((1 + EXAMPLE_SHARE) / 4)
    assert second.signals["lexical"] == pytest.approx(1 / 4)
    terms = normalize(SelectionRequest(query=HEADLINE)).terms
    assert terms.keys() >= {"email", "report", "dana"}
    index = demo.snapshot.index
    assert not index.described[index.vocab["dana"]]
