-- Audit events for bench/audit_console.py, shaped like what selection/answers.py
-- (SelectionAnswer.audit_record) and selection/services/tool_calls.py record.
-- $count, $first and $last are integers substituted by the bench (string.Template).
-- Every 20th event is a validation of the selection before it (1 in 5 of them
-- invalid); rare values: rare_tool picked (1 in 10,007), legacy_export left out
-- (1 in 9,973), reason budget_tokens (1 in 997), actor alice.reviewer (1 in 1,000),
-- degraded (1 in 97); no tool offered 1 in 20.
INSERT INTO audit_auditevent (event_type, actor_name, request_id, selection_id,
    catalog_slug, catalog_version, summary, input, output, created, prev_hash,
    hash_version, key_id)
SELECT
  CASE WHEN v THEN 'validation' ELSE 'selection' END,
  CASE WHEN g % 1000 = 3 THEN 'alice.reviewer' ELSE 'agent-' || (g % 50) END,
  md5('req' || g)::uuid,
  CASE WHEN v THEN NULL ELSE md5('sel' || g)::uuid END,
  'default', 7,
  CASE WHEN v THEN '1 tool call(s), ' || (CASE WHEN bad THEN 0 ELSE 1 END)
                   || ' valid: ' || p0
       ELSE left(qtext, 150) || ' -> ' || CASE WHEN notool THEN 'no tool'
                   ELSE p0 || ', ' || p1 || ', ' || p2 END END,
  CASE WHEN v THEN jsonb_build_object('kind', 'tool_calls',
        'selection_id', md5('sel' || (g - 1))::uuid, 'format', 'openai',
        'calls', jsonb_build_array(jsonb_build_object('name', p0,
            'call_id', 'call_' || g, 'format', 'openai',
            'arguments', '{"order_id": "' || g || '"}')))
  ELSE jsonb_build_object('format', 'canonical', 'input_hash', md5('in' || g) || md5('x' || g),
    'request', jsonb_build_object('query', qtext, 'messages', NULL,
        'max_candidates', 3, 'min_score', 0.05, 'scorer', NULL,
        'allow_unsafe', false, 'roles', NULL, 'categories', NULL,
        'allow_tools', NULL, 'block_tools', NULL, 'max_cost_per_call', NULL,
        'max_total_tokens', NULL, 'require_capabilities', NULL,
        'recent_tools', '[]'::jsonb, 'explain', g % 4 = 0, 'timeout_ms', NULL,
        'visible_roles', jsonb_build_array('support'), 'visible_unsafe', false),
    'caller', jsonb_build_object('scope', 'agent', 'client', 'agent-' || (g % 50),
        'catalogs', jsonb_build_array('default'), 'roles', jsonb_build_array('support'),
        'allow_unsafe', false)) END,
  CASE WHEN v THEN jsonb_build_object('selection_id', md5('sel' || (g - 1))::uuid,
      'catalog', 'default', 'catalog_version', 7, 'format', 'openai', 'valid', NOT bad,
      'calls', jsonb_build_array(jsonb_build_object('tool', p0, 'call_id', 'call_' || g,
          'valid', NOT bad,
          'errors', CASE WHEN bad THEN jsonb_build_array(jsonb_build_object(
              'pointer', '/order_id', 'rule', 'required',
              'message', '''order_id'' is a required property')) ELSE '[]' END,
          'flags', '[]'::jsonb,
          'arguments', CASE WHEN bad THEN NULL ELSE jsonb_build_object('order_id', g::text) END,
          'hint', CASE WHEN bad THEN '`order_id` is required' ELSE '' END,
          'tool_version', 3)))
  ELSE jsonb_build_object('catalog', 'default', 'catalog_version', 7,
    'settings_version', 4, 'scorer', 'hybrid', 'cached', g % 7 = 0,
    'degraded', g % 97 = 0, 'fallback_reason', CASE WHEN g % 97 = 0 THEN 'timeout' ELSE '' END,
    'selection_id', md5('sel' || g)::uuid, 'request_id', md5('req' || g)::uuid,
    'tools', CASE WHEN notool THEN '[]'::jsonb ELSE (
        SELECT jsonb_agg(jsonb_build_object('name', n, 'score', 0.9 - k * 0.1,
            'reason', 'matched: refund, order', 'signals', jsonb_build_object(
                'bm25f', 0.41, 'embedding', 0.63, 'name_match', 0.2, 'popularity', 0.05),
            'requires_approval', false, 'core', false, 'exploration', false,
            'version', 3, 'content_hash', md5(n)) ORDER BY k)
        FROM unnest(ARRAY[p0, p1, p2]) WITH ORDINALITY AS t(n, k)) END,
    'excluded', (SELECT jsonb_agg(x ORDER BY o) FROM (
        SELECT 0 AS o, jsonb_build_object('name', CASE WHEN g % 9973 = 5
                THEN 'legacy_export' ELSE 'tool_' || ((g * 7) % 200) END,
            'stage', 'policy', 'reason', CASE WHEN g % 997 = 1 THEN 'budget_tokens'
                WHEN g % 2 = 0 THEN 'blocked' ELSE 'role' END,
            'detail', 'Blocked by the catalog''s policy.', 'score', NULL) AS x
        UNION ALL SELECT 1, jsonb_build_object('name', 'tool_' || ((g * 11 + 3) % 200),
            'stage', 'policy', 'reason', 'unsafe', 'detail',
            'Unsafe tools need the caller''s unsafe permission.', 'score', 0.31)
        UNION ALL SELECT 1 + r, jsonb_build_object('name', 'tool_' || ((g + 50 + r * 13) % 200),
            'stage', 'rank', 'reason', 'cut',
            'detail', 'Scored high enough but ranked below the top 3.',
            'score', round((0.5 - r * 0.03)::numeric, 4))
        FROM generate_series(1, 10) r) e),
    'stats', jsonb_build_object('considered', 200, 'excluded_by_policy', 14,
        'below_min_score', 40, 'hidden', 12, 'engine_ms', 3.214, 'latency_ms', 5.871,
        'account', jsonb_build_object('considered', 200, 'picked', 3, 'policy', 14,
            'below_min_score', 40, 'scorer_threshold', 0, 'cut', 120, 'no_evidence', 23),
        'timings_ms', jsonb_build_object('snapshot', 0.05, 'engine', 3.2,
            'definitions', 0.6, 'audit', 0.4))) END,
  now() - interval '30 days' + (g * interval '30 days') / $count, '', 2, ''
FROM generate_series($first, $last) AS g,
LATERAL (SELECT g % 20 = 10 AS v, g % 100 = 10 AS bad, g % 20 = 0 AS notool,
    CASE WHEN g % 10007 = 1 THEN 'rare_tool' ELSE 'tool_' || (g % 200) END AS p0,
    'tool_' || ((g + 37) % 200) AS p1, 'tool_' || ((g + 74) % 200) AS p2,
    'refund the order number ' || g || ' for customer ' || (g % 5000) AS qtext) AS s
