"""Embeddings from an OpenAI-format HTTP API (OpenAI, Ollama, vLLM, Hugging Face
TEI, LiteLLM...)."""

from __future__ import annotations

from typing import Any

import numpy as np

from embeddings.base import EmbeddingError, batches, normalize_rows


class OpenAICompatibleBackend:
    """Embeddings from an OpenAI-format HTTP API (``POST {base_url}/embeddings``).

    ``base_url`` includes the version prefix, e.g. ``https://api.openai.com/v1`` or
    ``http://localhost:11434/v1`` (Ollama). ``dimension`` is learnt from the first
    response when not given. Rows are re-ordered by the ``index`` field of each
    returned item and normalised, since not every server does either.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 10.0,
        dimension: int | None = None,
        batch_size: int = 256,
    ) -> None:
        if not base_url or not model:
            raise EmbeddingError("OpenAI-compatible backend needs base_url and model")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.model_id = f"openai:{model}"
        self.api_key = api_key
        self.timeout = timeout
        self.batch_size = batch_size
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        """Vector length; asks the server once (embeds ``"dimension"``) if unknown."""
        if self._dimension is None:
            self.embed_documents(["dimension"])
        assert self._dimension is not None
        return self._dimension

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` in requests of at most ``batch_size`` inputs."""
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        chunks = [
            self._request([texts[i] for i in batch])
            for batch in batches(range(len(texts)), self.batch_size)
        ]
        return normalize_rows(np.concatenate(chunks, axis=0))

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one text (one request)."""
        return self.embed_documents([text])[0]

    def _headers(self) -> dict[str, str]:
        """JSON headers, plus a bearer token when an API key is configured."""
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _request(self, texts: list[str]) -> np.ndarray:
        """One POST; returns the raw (unnormalised) rows in input order."""
        import httpx

        url = f"{self.base_url}/embeddings"
        body = {"model": self.model, "input": texts}
        try:
            response = httpx.post(
                url, json=body, headers=self._headers(), timeout=self.timeout
            )
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"embedding request to {url} failed: {exc}") from exc
        if response.status_code >= 400:
            detail = response.text[:200]
            raise EmbeddingError(
                f"embedding request to {url} returned HTTP "
                f"{response.status_code}: {detail}"
            )
        try:
            payload = response.json()
        except ValueError as exc:
            raise EmbeddingError(f"embedding response from {url} is not JSON") from exc
        return self._parse(payload, len(texts))

    def _parse(self, payload: Any, expected: int) -> np.ndarray:
        """Check an OpenAI-format payload and return its vectors ordered by index."""
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or len(data) != expected:
            raise EmbeddingError(
                f"embedding response must have a 'data' list of {expected} items"
            )
        rows: list[Any] = [None] * expected
        for position, item in enumerate(data):
            index, vector = _item_vector(item, position)
            if not 0 <= index < expected or rows[index] is not None:
                raise EmbeddingError(f"embedding response has a bad index {index!r}")
            rows[index] = vector
        matrix = np.asarray(rows, dtype=np.float32)
        self._check_dimension(matrix)
        return matrix

    def _check_dimension(self, matrix: np.ndarray) -> None:
        """Learn the dimension from the first response; reject a changed one."""
        width = int(matrix.shape[1]) if matrix.ndim == 2 else 0
        if width == 0:
            raise EmbeddingError("embedding response has empty vectors")
        if self._dimension is None:
            self._dimension = width
        elif width != self._dimension:
            raise EmbeddingError(
                f"embedding dimension {width} does not match {self._dimension}"
            )


def _item_vector(item: Any, position: int) -> tuple[int, list[float]]:
    """(index, embedding) of one ``data`` item; index defaults to its position."""
    if not isinstance(item, dict):
        raise EmbeddingError("embedding response items must be objects")
    index = item.get("index", position)
    vector = item.get("embedding")
    if isinstance(index, bool) or not isinstance(index, int):
        raise EmbeddingError(f"embedding response has a bad index {index!r}")
    if not isinstance(vector, list) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in vector
    ):
        raise EmbeddingError("embedding response item has no numeric 'embedding'")
    return index, vector
