"""The console's Labels and Evaluation pages: JSONL and CSV uploads (the samples
shipped in static/learning/ among them), refusals shown, deletes, a run started
with settings tried."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from audit.choices import EventType
from audit.models import AuditEvent
from learning.models import Evaluation, Label
from learning.uploads import UploadError, read_label_file
from tests.factories import make_tool

pytestmark = pytest.mark.django_db

STATIC = Path(__file__).resolve().parents[2] / "static" / "learning"
PAGE = "/catalogs/default/labels/"


@pytest.fixture
def tools(db):
    for name in ("get_weather", "send_email", "create_calendar_event"):
        make_tool(name=name)


def post_file(client, name, data):
    upload = SimpleUploadedFile(name, data)
    return client.post(PAGE + "upload/", {"file": upload})


@pytest.mark.parametrize("sample", ["labels-sample.jsonl", "labels-sample.csv"])
def test_the_sample_files_upload_whole(as_curator, tools, sample):
    response = post_file(as_curator, sample, (STATIC / sample).read_bytes())
    assert response.status_code == 200
    assert Label.objects.count() == 4
    assert Label.objects.filter(tools=[]).count() == 1
    assert "4</strong> labels added" in response.content.decode()
    event = AuditEvent.objects.get(event_type=EventType.LABELS_CHANGED)
    assert event.input["channel"] == "console"


def test_a_csv_row_names_several_tools_with_a_bar(tools):
    items = read_label_file(
        "x.csv", b"query,tools\nbook and mail,get_weather| send_email\n"
    )
    assert items == [{"query": "book and mail", "tools": ["get_weather", "send_email"]}]


def test_refused_lines_are_shown_with_their_reason(as_curator, tools):
    data = (
        b'{"query": "weather", "tools": ["get_weather"]}\nnot json\n\n'
        b'{"query": "x", "tools": ["nope"]}\n'
    )
    body = post_file(as_curator, "l.jsonl", data).content.decode()
    assert Label.objects.count() == 1
    assert "labels[1]: must be an object" in body
    assert "labels[2].tools: no tool &#x27;nope&#x27;" in body


@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("l.txt", b"{}", "a .jsonl or .csv file"),
        ("l.csv", b"text,tool\nx,y\n", "header columns query and tools"),
        ("l.jsonl", b"\xff\xfe", "UTF-8"),
        ("l.jsonl", b'{"query": "x", "tools": []}\n' * 10_001, "at most 10000"),
    ],
)
def test_a_file_that_cannot_be_read_is_refused_whole(
    as_curator, tools, name, data, words
):
    with pytest.raises(UploadError, match=words):
        read_label_file(name, data)
    response = post_file(as_curator, name, data)
    assert response.status_code == 400
    assert not Label.objects.exists()


def test_deleting_from_the_page_one_or_all_of_a_filter(as_curator, tools):
    keep = Label.objects.create(catalog_id=1, query="keep")
    gone = Label.objects.create(catalog_id=1, query="gone")
    Label.objects.create(catalog_id=1, query="p", status="proposed", origin="use")
    as_curator.post(PAGE + "delete/", {"id": gone.pk})
    as_curator.post(PAGE + "delete/", {"scope": "all", "status": "proposed"})
    assert list(Label.objects.all()) == [keep]
    assert AuditEvent.objects.filter(event_type=EventType.LABELS_CHANGED).count() == 2


def test_the_evaluation_page_refuses_bad_settings_and_queues_a_run(as_curator, tools):
    page = "/catalogs/default/evaluation/"
    empty = as_curator.post(page, {})
    assert empty.status_code == 400
    assert "no accepted labels" in empty.content.decode()
    Label.objects.create(catalog_id=1, query="weather in Oslo", tools=["get_weather"])
    bad = as_curator.post(page, {"settings": '{"default_scorer": "nope"}'})
    assert bad.status_code == 400
    assert "settings.default_scorer" in bad.content.decode()
    broken = as_curator.post(page, {"settings": "{"})
    assert broken.status_code == 400
    assert not Evaluation.objects.exists()
    ok = as_curator.post(page, {"settings": '{"default_scorer": "keyword"}'})
    assert ok.status_code == 302
    run = Evaluation.objects.get()
    assert run.settings_data == {"default_scorer": "keyword"}
    assert "queued" in as_curator.get(page).content.decode()


def test_huge_or_odd_numbers_in_the_pages_are_not_an_error(as_curator, tools):
    huge = "9" * 5000
    page = as_curator.get(f"/catalogs/default/evaluation/?a={huge}&b=x")
    assert page.status_code == 200
    assert as_curator.post(PAGE + "delete/", {"id": huge}).status_code == 302
    review = "/catalogs/default/labels/review/"
    answer = as_curator.post(review, {"action": "accept", "ids": [huge, "²", "-1"]})
    assert answer.status_code == 302
