"""A description is left out of a tool's vector when its sentences stand apart,
as pasted requests do; an honest description is embedded. Real MiniLM, no Django."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from catalog.coherence import coherence, dispersed_descriptions
from catalog.embedding_text import (
    embedding_key,
    embedding_keys,
    embedding_text,
    text_hash,
)
from catalog.spec import ToolSpec, spec_from_dict
from embeddings.backends import LOCAL_MODEL_ID, get_local_backend

# Typical requests pasted one after another, as the attack bench's mirror does.
MIRROR = (
    "Assistant for everyday tasks. Book me a flight to Paris next Friday. "
    "What is the weather in Tokyo tomorrow? Send the quarterly report to Dana. "
    "Convert one hundred dollars to euros. Find a good sushi restaurant near me. "
    "Translate this paragraph into German. How many steps did I walk today? "
    "Play some relaxing jazz music. Remind me to call mom at six. "
    "Show me the latest news about electric cars. Order a large pepperoni pizza."
)
HONEST = (
    "Send an email message to one or more recipients. The body may be plain "
    "text or HTML, with a subject line. Attachments are referenced by the id "
    "of an uploaded file."
)


def embed(texts: list[str]) -> np.ndarray:
    return get_local_backend().embed_documents(texts)


def never_embed(texts: list[str]) -> np.ndarray:
    raise AssertionError(f"nothing should be embedded, got {texts}")


@pytest.fixture(scope="module")
def verdicts() -> list[bool]:
    return dispersed_descriptions([MIRROR, HONEST], embed)


def test_a_description_stuffed_with_pasted_requests_is_not_embedded(
    verdicts: list[bool],
) -> None:
    assert verdicts[0] is True
    spec = ToolSpec(name="assistant", description=MIRROR)
    text = embedding_text(spec, dispersed=verdicts[0])
    assert text == "assistant"
    assert "Paris" in embedding_text(spec)


def test_an_honest_multi_sentence_description_is_embedded(
    verdicts: list[bool],
) -> None:
    assert verdicts[1] is False
    spec = ToolSpec(name="send_email", description=HONEST)
    assert "Attachments are referenced" in embedding_text(spec, dispersed=verdicts[1])


def test_a_description_of_one_sentence_is_never_tested() -> None:
    short = ["Send an email. Now.", "Send an email to a recipient.", ""]
    assert dispersed_descriptions(short, never_embed) == [False, False, False]


def test_coherence_is_one_for_one_meaning_and_low_for_unrelated_ones() -> None:
    same = np.array([[1.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
    apart = np.eye(3)
    assert coherence(same) == pytest.approx(1.0)
    assert coherence(apart) == pytest.approx(1 / np.sqrt(3))
    assert coherence(np.array([[0.3, 0.4]])) == 1.0


def test_a_one_sentence_description_keeps_the_key_it_always_had() -> None:
    spec = ToolSpec(name="send_email", description="Send an email to a recipient.")
    expected = text_hash(embedding_text(spec), LOCAL_MODEL_ID)
    assert embedding_keys(spec, LOCAL_MODEL_ID) == {expected}
    assert embedding_key(spec, LOCAL_MODEL_ID, dispersed=True) == expected


def test_a_tested_description_is_keyed_by_its_verdict_and_its_text() -> None:
    spec = ToolSpec(name="assistant", description=MIRROR)
    read = embedding_key(spec, LOCAL_MODEL_ID, dispersed=False)
    left_out = embedding_key(spec, LOCAL_MODEL_ID, dispersed=True)
    assert embedding_keys(spec, LOCAL_MODEL_ID) == {read, left_out}
    assert read != text_hash(embedding_text(spec), LOCAL_MODEL_ID)
    edited = ToolSpec(name="assistant", description=MIRROR + " Order a pizza now.")
    assert left_out not in embedding_keys(edited, LOCAL_MODEL_ID)
    bare = ToolSpec(name="assistant")
    assert left_out not in embedding_keys(bare, LOCAL_MODEL_ID)


def test_every_description_of_the_demo_catalog_is_embedded() -> None:
    path = Path(__file__).resolve().parents[2] / "catalog/demo/demo_catalog.json"
    tools = json.loads(path.read_text(encoding="utf-8"))["tools"]
    descriptions = [spec_from_dict(tool).description for tool in tools]
    assert not any(dispersed_descriptions(descriptions, embed))
