-- title: Passes of a case at a commit, each shared row once
-- description: The scheduler's passes (scope schedule) and each kernel's codegen passes (scope lower) of a case at
--   one commit, in pipeline order, with the node count after each pass and whether it changed the graph. A pass
--   whose graph is the same for several renderers (C and LLVM run the same passes until their renderers differ)
--   is one row; `renderers` lists them. pass_name links to the pass's graph and its rewrite steps (first renderer
--   listed). An unknown commit gives one row saying so.
-- parameters: commit (commit: sha, sha prefix or version), case_name (case name, e.g. matmul),
--   kernel (optional: one kernel position, e.g. 0; empty for all)
WITH c AS (
  SELECT commit_id AS id FROM v_commits
  WHERE :commit <> '' AND (sha = :commit OR sha LIKE :commit || '%' OR version = :commit)
  ORDER BY sha = :commit DESC, history_rank DESC LIMIT 1
), runs_of AS (
  SELECT r.id AS run_id, r.backend, rc.case_result_id
  FROM runs r JOIN run_cases rc ON rc.run_id = r.id JOIN cases k ON k.id = rc.case_id
  WHERE r.commit_id = (SELECT id FROM c) AND r.is_current = 1 AND k.name = :case_name
), rows_of AS (
  SELECT ro.run_id, ro.backend, 'schedule' AS scope, NULL AS position, NULL AS kernel_name, NULL AS renderer,
         pe.position AS pass_position, pe.name AS pass_name, pe.depth, pe.node_count, pe.changed, pe.graph_id
  FROM runs_of ro JOIN case_results cr ON cr.id = ro.case_result_id
  JOIN pass_entries pe ON pe.pass_list_id = cr.schedule_pass_list_id
  WHERE :kernel = ''
  UNION ALL
  SELECT ro.run_id, ro.backend, 'lower', si.position, kn.name, p.renderer, pe.position, pe.name, pe.depth,
         pe.node_count, pe.changed, pe.graph_id
  FROM runs_of ro JOIN schedule_items si ON si.case_result_id = ro.case_result_id
  JOIN kernels kn ON kn.id = si.kernel_id JOIN programs p ON p.schedule_item_id = si.id
  JOIN pass_entries pe ON pe.pass_list_id = p.pass_list_id
  WHERE :kernel = '' OR si.position = CAST(:kernel AS INTEGER)
)
SELECT * FROM (
  SELECT r.run_id, :case_name AS "case", r.scope, r.position, r.kernel_name, r.pass_position, r.pass_name, r.depth,
         r.node_count, r.changed, group_concat(r.renderer, ',') AS renderers, g.hash AS graph_hash, r.backend
  FROM (SELECT * FROM rows_of ORDER BY renderer) r LEFT JOIN graphs g ON g.id = r.graph_id
  GROUP BY r.run_id, r.scope, r.position, r.kernel_name, r.pass_position, r.pass_name, r.depth, r.node_count,
           r.changed, r.graph_id, CASE WHEN r.graph_id IS NULL THEN r.renderer END  -- no graph: nothing to share
  ORDER BY r.backend, r.scope = 'lower', r.position, r.pass_position, renderers
)
UNION ALL
SELECT NULL, :case_name, NULL, NULL, 'no stored commit matches ' || quote(:commit), NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM c)
