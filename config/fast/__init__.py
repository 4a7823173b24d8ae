"""The hot paths that bypass the ORM or DRF, in one place.

New code uses the ORM and DRF. Each bypass below exists because a benchmark said
so (its gain: bench/README.md, "Fast paths"), and tests/fastpath/test_parity.py
holds it to the answers of the path it replaces.

- ``rows``: reads whose SQL is made once per process, rows built into model
  instances with ``Model.from_db`` (instead of the ORM's query compiler). Used by
  ``identity.reads`` (the key on every API request), ``catalog.reads`` (a catalog
  by slug, its tools by name), ``calls.reads`` (a call's catalog, tools, links and
  sources in one statement) and ``selection.querysets`` (a catalog's settings).
- ``copy_rows``: many new rows of one model in one ``COPY`` (instead of
  ``bulk_create``). Used by ``catalog.services.bulk_import`` (tools and change
  records), ``learning.services.labels`` (uploaded labels) and
  ``audit.services.record_event(..., many=...)`` (an import's audit rows).
- ``insert``: a new row's INSERT made once per process (instead of ``save``).
  Used by ``audit.writer.insert``: every audit row ``record_event`` writes.
- ``beside``: that INSERT sent on an autocommit connection of the thread's own,
  its reply collected later (instead of writing on the request's connection).
  Used by ``audit.writer.send_soon``: a selection's row,
  ``record_event(..., soon=True)``, commits while its answer renders.
- ``plain_input``: a plainly valid body read by checks made once from its
  serializer's fields (instead of DRF's field objects); the serializer judges and
  words everything else. Declared by ``selection.api.input`` (/select, its batch
  items, MCP ``search_tools``) and ``calls.input`` (a tool call, REST and MCP).

Two more stay with the idea they serve: ``selection.api.serializers.answer_body``
(/select's answer built without running ``SelectOutputSerializer``'s fields, held
to them by tests/selection/test_answer_body.py) and ``catalog.schema_fastpath``
(jsonschema's metaschema walk skipped for plain tool schemas, held by
tests/catalog/test_schema_fastpath.py). Not bypasses: ``config.jsonparse``
guards a body (depth, repeated keys, unstorable text) before DRF's parser reads
it, and SQL the ORM cannot say (recursive key chains, advisory locks, pgvector
searches, the audit sealer's and verifier's statements) stays with its idea.
"""
