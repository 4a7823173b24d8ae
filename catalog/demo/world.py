"""The demo MCP server's little world: a mailbox, a shared drive and the weather.

Pure Python, no network and nothing written to disk: each server process starts
from the same mailbox and drive, and what a call changes (a sent email, a file in
the trash) lasts as long as that process. The weather is made up from the place's
name, so the same place always has the same weather.

``answer(name, arguments)`` runs one tool and gives ``(result, is_error)``; Quiver
has already checked the arguments against the tool's schema, but a tool still
answers an error rather than fail on one it cannot use.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from copy import deepcopy
from typing import Any

Result = tuple[dict[str, Any], bool]

MAILBOX: list[dict[str, Any]] = [
    {
        "id": "m-1001",
        "from": "dana@example.com",
        "to": "you@example.com",
        "subject": "Quarterly report: can you send me the final version?",
        "date": "2026-10-02",
        "unread": True,
        "has_attachment": False,
    },
    {
        "id": "m-1002",
        "from": "finance@example.com",
        "to": "you@example.com",
        "subject": "Invoice 4471 from Acme",
        "date": "2026-09-28",
        "unread": False,
        "has_attachment": True,
    },
    {
        "id": "m-1003",
        "from": "legal@example.com",
        "to": "you@example.com",
        "subject": "NDA with Acme: signed copy",
        "date": "2026-09-21",
        "unread": False,
        "has_attachment": True,
    },
]

DRIVE: dict[str, dict[str, Any]] = {
    "f-101": {
        "path": "/Reports/quarterly-report-q3.txt",
        "text": "Q3 report. Revenue 4.2M (+8%), costs 3.1M, 14 new customers.",
    },
    "f-102": {
        "path": "/Reports/quarterly-report-q2.txt",
        "text": "Q2 report. Revenue 3.9M (+5%), costs 3.0M, 9 new customers.",
    },
    "f-201": {
        "path": "/Contracts/acme-nda.txt",
        "text": "Mutual non-disclosure agreement between Acme and us, signed.",
    },
    "f-301": {
        "path": "/Backups/old-backup-2023.txt",
        "text": "An old backup nobody has opened since 2023.",
    },
}

SKIES = ("clear", "partly cloudy", "overcast", "light rain", "showers", "windy")


class World:
    """One process's mailbox, drive and trash (see the module's docstring)."""

    def __init__(self) -> None:
        self.mailbox = deepcopy(MAILBOX)
        self.drive = deepcopy(DRIVE)
        self.sent: list[dict[str, Any]] = []
        self.trash: dict[str, dict[str, Any]] = {}

    def answer(self, name: str, arguments: dict[str, Any]) -> Result:
        tool = self.tools().get(name)
        if tool is None:
            return {"error": f"no tool {name!r} on the demo server"}, True
        return tool(arguments)

    def tools(self) -> dict[str, Callable[[dict[str, Any]], Result]]:
        return {
            "get_current_weather": current_weather,
            "get_weather_forecast": weather_forecast,
            "send_email": self.send_email,
            "search_emails": self.search_emails,
            "list_files": self.list_files,
            "read_file": self.read_file,
            "delete_file": self.delete_file,
        }

    def send_email(self, arguments: dict[str, Any]) -> Result:
        message = {
            "id": f"sent-{len(self.sent) + 1}",
            "to": list(arguments.get("to") or []),
            "subject": str(arguments.get("subject", "")),
        }
        self.sent.append(message)
        note = "Kept by the demo server: nothing leaves this machine."
        return {"status": "sent", **message, "note": note}, False

    def search_emails(self, arguments: dict[str, Any]) -> Result:
        words = str(arguments.get("query", "")).lower().split()
        found = [
            message
            for message in self.mailbox
            if all(word in _mail_text(message) for word in words)
            and (not arguments.get("unread_only") or message["unread"])
        ]
        return {"messages": found, "count": len(found)}, False

    def list_files(self, arguments: dict[str, Any]) -> Result:
        folder = "/" + str(arguments.get("folder_path") or "/").strip("/")
        prefix = folder.rstrip("/") + "/"
        files = [
            {"file_id": file_id, "path": item["path"]}
            for file_id, item in sorted(self.drive.items())
            if item["path"].startswith(prefix)
        ]
        return {"folder": folder, "files": files}, False

    def read_file(self, arguments: dict[str, Any]) -> Result:
        file_id = str(arguments.get("file_id", ""))
        item = self.drive.get(file_id)
        if item is None:
            return {"error": f"no file {file_id!r} on the drive"}, True
        return {"file_id": file_id, **item}, False

    def delete_file(self, arguments: dict[str, Any]) -> Result:
        file_id = str(arguments.get("file_id", ""))
        item = self.drive.pop(file_id, None)
        if item is None:
            return {"error": f"no file {file_id!r} on the drive"}, True
        self.trash[file_id] = item
        return {"status": "trashed", "file_id": file_id, "path": item["path"]}, False


def _mail_text(message: dict[str, Any]) -> str:
    return " ".join(str(message[key]) for key in ("from", "to", "subject")).lower()


def _place(arguments: dict[str, Any]) -> str:
    location = arguments.get("location")
    if isinstance(location, dict) and "place" in location:
        return str(location["place"])
    if isinstance(location, dict):
        return f"{location.get('lat')},{location.get('lon')}"
    return str(location or "")


def _weather_on(place: str, day: int, imperial: bool) -> dict[str, Any]:
    """The made-up weather of ``place`` ``day`` days from now."""
    seed = hashlib.sha256(f"{place.lower()}|{day}".encode()).digest()
    celsius = seed[0] % 30 - 3
    temperature = round(celsius * 9 / 5 + 32) if imperial else celsius
    return {
        "temperature": temperature,
        "sky": SKIES[seed[1] % len(SKIES)],
        "chance_of_rain": seed[2] % 101,
    }


def _day(offset: int) -> str:
    return {0: "today", 1: "tomorrow"}.get(offset, f"in {offset} days")


def current_weather(arguments: dict[str, Any]) -> Result:
    place = _place(arguments)
    units = str(arguments.get("units") or "metric")
    now = _weather_on(place, 0, units == "imperial")
    return {"place": place, "units": units, **now}, False


def weather_forecast(arguments: dict[str, Any]) -> Result:
    place = _place(arguments)
    units = str(arguments.get("units") or "metric")
    days = max(1, min(14, int(arguments.get("days") or 5)))
    forecast = [
        {"day": _day(n), **_weather_on(place, n, units == "imperial")}
        for n in range(days)
    ]
    return {"place": place, "units": units, "days": forecast}, False
