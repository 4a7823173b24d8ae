"""Vectors sentence-transformers (torch) gave all-MiniLM-L6-v2's fixed texts,
stored once in ``tests/data/minilm_reference.json`` by
``bench/make_minilm_reference.py``: torch is not installed at run time, so the
reference is test data, not a live model. No Django needed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REFERENCE_PATH = Path(__file__).resolve().parent / "data" / "minilm_reference.json"


def load_reference() -> dict[str, Any]:
    """A fresh copy of the reference (texts, query and document vectors)."""
    data: dict[str, Any] = json.loads(REFERENCE_PATH.read_text(encoding="utf-8"))
    return data
