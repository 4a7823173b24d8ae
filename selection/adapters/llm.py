"""An OpenAI-compatible chat endpoint for the LLM scorer, with a persistent cache.

Seed 003: the same prompt gets the same answer (reproducibility), so answers are
stored by the hash of (model, prompt); failures are not cached and the engine falls
back to keyword ranking when no usable answer comes back."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable

import httpx
from django.conf import settings

from selection.models import LLMAnswer

log = logging.getLogger(__name__)


def llm_callable() -> Callable[[str], str] | None:
    """A prompt -> text function, or None when no endpoint is configured."""
    config = settings.QUIVER_LLM
    if not config["BASE_URL"]:
        return None
    model = str(config["MODEL"])
    base_url, api_key = str(config["BASE_URL"]), str(config["API_KEY"])

    def ask(prompt: str) -> str:
        key = hashlib.sha256(f"{model}\n{prompt}".encode()).hexdigest()
        cached = LLMAnswer.objects.filter(key=key).values_list("answer", flat=True)
        if cached:
            return str(cached[0])
        answer = _chat(base_url, model, api_key, prompt)
        if answer.strip():
            LLMAnswer.objects.get_or_create(
                key=key, defaults={"model": model, "answer": answer}
            )
        return answer

    return ask


def _chat(base_url: str, model: str, api_key: str, prompt: str) -> str:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    body = {
        "model": model,
        "temperature": 0,
        "messages": [{"role": "user", "content": prompt}],
    }
    try:
        response = httpx.post(
            f"{base_url.rstrip('/')}/chat/completions",
            json=body,
            headers=headers,
            timeout=float(str(settings.QUIVER_LLM["TIMEOUT_S"])),
        )
        response.raise_for_status()
        return str(response.json()["choices"][0]["message"]["content"] or "")
    except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as exc:
        log.warning("LLM selection call failed: %s", exc)
        return ""
