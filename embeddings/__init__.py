"""Tool embeddings without Django: the text a tool is embedded from and the models.

* ``catalog.embedding_text`` - ``embedding_text`` (the documented recipe),
  ``split_identifier`` and ``text_hash`` (cache key of a stored vector).
* ``embeddings.backends`` - the ``EmbeddingBackend`` protocol, the bundled
  local model, any OpenAI-format HTTP API, and ``backend_from_settings``.
* ``embeddings.minilm`` - a numpy-only MiniLM forward pass used for fast
  single-query embedding.

Submodules are imported explicitly by callers so that importing this package stays
cheap (no numpy, torch or tokenizers until needed).
"""
