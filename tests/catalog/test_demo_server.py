"""The demo MCP server make run puts behind the demo catalog: its tools are the
catalog's own entries, one of them destructive, and its little world answers."""

from __future__ import annotations

import json

from catalog.demo.server import DEMO_FILE, HINTS, listing
from catalog.demo.world import World


def demo_entries() -> dict[str, dict]:
    tools = json.loads(DEMO_FILE.read_text(encoding="utf-8"))["tools"]
    return {tool["name"]: tool for tool in tools}


def test_each_served_tool_is_the_demo_catalogs_entry_with_the_same_hints():
    entries = demo_entries()
    for name, listed in listing().items():
        entry = entries[name]
        assert listed["title"] == entry["title"]
        assert listed["description"] == entry["description"]
        assert listed["inputSchema"] == entry["parameters"]
        assert listed["annotations"] == entry["annotations"] == HINTS[name]


def test_it_serves_weather_email_and_files_with_exactly_one_destructive_tool():
    entries = demo_entries()
    categories = {entries[name]["category"] for name in listing()}
    assert categories == {"geo", "messaging", "files"}
    destructive = [name for name, h in HINTS.items() if h.get("destructiveHint")]
    assert destructive == ["delete_file"]
    assert entries["delete_file"]["requires_approval"] is True
    read_only = [name for name, hints in HINTS.items() if hints.get("readOnlyHint")]
    assert all("read-only" in entries[name]["capabilities"] for name in read_only)
    assert all(hints["openWorldHint"] is False for hints in HINTS.values())


def test_a_sent_email_is_kept_and_a_trashed_file_is_gone_from_the_drive():
    world = World()

    sent, failed = world.answer(
        "send_email", {"to": ["dana@example.com"], "subject": "Q3", "body": "Hi"}
    )
    trashed, _ = world.answer("delete_file", {"file_id": "f-301"})
    again, failed_again = world.answer("delete_file", {"file_id": "f-301"})

    assert (sent["status"], sent["to"], failed) == ("sent", ["dana@example.com"], False)
    assert trashed == {
        "status": "trashed",
        "file_id": "f-301",
        "path": "/Backups/old-backup-2023.txt",
    }
    assert failed_again and "no file 'f-301'" in again["error"]
    listed, _ = world.answer("list_files", {"folder_path": "/Backups"})
    assert listed["files"] == []


def test_the_weather_of_a_place_is_always_the_same_and_the_mailbox_is_searchable():
    place = {"location": {"place": "Paris"}}
    assert World().answer("get_current_weather", place) == World().answer(
        "get_current_weather", place
    )
    forecast, _ = World().answer("get_weather_forecast", {**place, "days": 3})
    days = [day["day"] for day in forecast["days"]]
    assert days == ["today", "tomorrow", "in 2 days"]
    found, _ = World().answer("search_emails", {"query": "quarterly"})
    assert [message["from"] for message in found["messages"]] == ["dana@example.com"]


def test_each_world_is_its_own_and_an_unknown_tool_is_an_error():
    first, second = World(), World()
    first.answer("delete_file", {"file_id": "f-101"})
    assert second.answer("read_file", {"file_id": "f-101"})[1] is False
    answer, failed = first.answer("launch_rocket", {})
    assert failed and "no tool 'launch_rocket'" in answer["error"]
