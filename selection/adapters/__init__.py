"""What the engine needs from the outside world, one adapter each: catalog
snapshots from Postgres (``snapshots``), the semantic pool from pgvector
(``pgvector``) and the LLM scorer's chat endpoint (``llm``)."""
