-- title: Kernels and generated source of a case at a commit
-- description: Every schedule item of a case at one commit, in order, with its kernel name, AST size, the AST as
--   tinygrad code (pyrender, or the AST text where pyrender is missing), each renderer's generated source and, for
--   captured programs, the call site that lowered it; context: the ContextVars it was lowered under (JSON),
--   lowered_by: the renderer tinygrad used for a captured kernel. An unknown commit gives one row saying so.
-- parameters: commit (commit: sha, sha prefix or version), case_name (case name, e.g. matmul),
--   renderer (optional: one renderer, e.g. C; empty for all)
WITH c AS (
  SELECT commit_id AS id FROM v_commits
  WHERE :commit <> '' AND (sha = :commit OR sha LIKE :commit || '%' OR version = :commit)
  ORDER BY sha = :commit DESC, history_rank DESC LIMIT 1
), items AS (  -- the commit's current runs first, then their items: no view over every run
  SELECT r.backend, si.id AS item_id, si.position, si.root_op, si.call_site, si.context, si.lowered_by, kn.name AS kernel_name, kn.node_count,
         coalesce(pr.text, at.text) AS pyrender
  FROM runs r JOIN run_cases rc ON rc.run_id = r.id JOIN cases k ON k.id = rc.case_id
  JOIN schedule_items si ON si.case_result_id = rc.case_result_id JOIN kernels kn ON kn.id = si.kernel_id
  LEFT JOIN blobs pr ON pr.id = kn.pyrender_blob_id LEFT JOIN blobs at ON at.id = kn.ast_text_blob_id
  WHERE r.commit_id = (SELECT id FROM c) AND r.is_current = 1 AND k.name = :case_name
)
SELECT * FROM (
  SELECT i.position, i.kernel_name, p.renderer, b.text AS source, i.pyrender, i.node_count, l.uop_count, i.root_op,
         i.backend, p.error, i.call_site, i.context, i.lowered_by
  FROM items i
  LEFT JOIN programs p ON p.schedule_item_id = i.item_id AND (:renderer = '' OR p.renderer = :renderer)
  LEFT JOIN blobs b ON b.id = p.source_blob_id LEFT JOIN linears l ON l.id = p.linear_id
  ORDER BY i.backend, i.position, p.renderer
)
UNION ALL
SELECT NULL, 'no stored commit matches ' || quote(:commit), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM c)
