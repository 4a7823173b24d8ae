"""The audit event types reference has a row for every event type the chain holds."""

from __future__ import annotations

from audit.choices import EventType
from tests.docs.env_reads import ROOT

REFERENCE = ROOT / "docs" / "reference" / "audit-events.md"


def test_every_event_type_has_a_row_in_the_reference():
    rows = [
        line.split("|")[1]
        for line in REFERENCE.read_text().split("## Types")[1].splitlines()
        if line.startswith("| `")
    ]
    documented = " ".join(rows)
    missing = [t.value for t in EventType if f"`{t.value}`" not in documented]
    assert missing == [], f"add a row to {REFERENCE.relative_to(ROOT)} for {missing}"
