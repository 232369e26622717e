-- title: Kernels and generated source of a case at a commit
-- description: Every schedule item of a case at one commit, in order, with its kernel name, AST size, the AST as
--   tinygrad code (pyrender, or the AST text where pyrender is missing), each renderer's generated source and, for
--   captured programs, the call site that lowered it. An unknown commit gives one row saying so.
-- parameters: commit (commit: sha, sha prefix or version), case_name (case name, e.g. matmul),
--   renderer (optional: one renderer, e.g. C; empty for all)
WITH c AS (
  SELECT commit_id AS id FROM v_commits
  WHERE :commit <> '' AND (sha = :commit OR sha LIKE :commit || '%' OR version = :commit)
  ORDER BY sha = :commit DESC, history_rank DESC LIMIT 1
)
SELECT * FROM (
  SELECT k.position, k.kernel_name, s.renderer, s.source, coalesce(k.pyrender, k.ast_text) AS pyrender,
         k.node_count, s.uop_count, k.root_op, k.backend, s.error,
         (SELECT si.call_site FROM run_cases rc JOIN cases cs ON cs.id = rc.case_id
          JOIN schedule_items si ON si.case_result_id = rc.case_result_id
          WHERE rc.run_id = k.run_id AND cs.name = k."case" AND si.position = k.position) AS call_site
  FROM v_kernels k JOIN runs r ON r.id = k.run_id
  LEFT JOIN v_sources s ON s.run_id = k.run_id AND s."case" = k."case" AND s.position = k.position
       AND (:renderer = '' OR s.renderer = :renderer)
  WHERE r.commit_id = (SELECT id FROM c) AND k."case" = :case_name
  ORDER BY k.backend, k.position, s.renderer
)
UNION ALL
SELECT NULL, 'no stored commit matches ' || quote(:commit), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM c)
