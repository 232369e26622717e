-- title: Where Svod differs from tinygrad for a case
-- description: Per kernel of a case, the latest stored Svod log (or one Svod commit's) against tinygrad at a
--   commit: Svod's initial AST node count against tinygrad's kernel AST node count, and Svod's final stage
--   (20-final_rewrite, else its last complete stage) node count against the number of linearized UOps tinygrad's C
--   renderer consumed, each with Svod minus tinygrad. Kernels are paired by order: the n-th Svod kernel (0-based,
--   log order) with the n-th SINK item of tinygrad's schedule (copies and other non-kernel items are skipped).
--   The tinygrad run is the commit's run holding the case, CPU backend first, else the newest.
-- parameters: case_name (case name, e.g. add), commit (tinygrad commit: sha, sha prefix or version),
--   svod_commit (optional: a Svod commit, sha or prefix; empty for the latest log of the case)
WITH tc AS (
  SELECT commit_id AS id FROM v_commits
  WHERE :commit <> '' AND (sha = :commit OR sha LIKE :commit || '%' OR version = :commit)
  ORDER BY sha = :commit DESC, history_rank DESC LIMIT 1
), tr AS (
  SELECT r.id FROM runs r JOIN run_cases rc ON rc.run_id = r.id JOIN cases c ON c.id = rc.case_id
  WHERE r.commit_id = (SELECT id FROM tc) AND c.name = :case_name AND r.is_current = 1
  ORDER BY r.backend = 'CPU' DESC, r.id DESC LIMIT 1
), sr AS (
  SELECT r.id FROM svod_runs r JOIN cases c ON c.id = r.case_id
  WHERE c.name = :case_name
    AND (:svod_commit = '' OR r.svod_commit = :svod_commit OR r.svod_commit LIKE :svod_commit || '%')
  ORDER BY r.ingested_at DESC, r.id DESC LIMIT 1
), tg AS (
  SELECT row_number() OVER (ORDER BY k.position) - 1 AS kernel_index, k.run_id, k.sha, k.version, k.backend,
         k.position, k.kernel_name, k.node_count,
         (SELECT s.uop_count FROM v_sources s WHERE s.run_id = k.run_id AND s."case" = k."case"
            AND s.position = k.position AND s.renderer = 'C') AS c_uops
  FROM v_kernels k
  WHERE k.run_id = (SELECT id FROM tr) AND k."case" = :case_name AND k.root_op = 'SINK'
), sv AS (
  SELECT kernel_index, kernel_name, initial_nodes, final_stage, final_nodes, run_id, svod_commit
  FROM v_svod_kernels WHERE run_id = (SELECT id FROM sr)
), idx AS (
  SELECT kernel_index FROM sv UNION SELECT kernel_index FROM tg
)
SELECT idx.kernel_index, sv.kernel_name AS svod_kernel, tg.position AS tinygrad_position,
       tg.kernel_name AS tinygrad_kernel,
       sv.initial_nodes AS svod_initial_nodes, tg.node_count AS tinygrad_ast_nodes,
       sv.initial_nodes - tg.node_count AS ast_difference,
       sv.final_stage AS svod_final_stage, sv.final_nodes AS svod_final_nodes, tg.c_uops AS tinygrad_c_uops,
       sv.final_nodes - tg.c_uops AS final_difference,
       CASE WHEN sv.kernel_index IS NULL THEN 'tinygrad only' WHEN tg.kernel_index IS NULL THEN 'svod only'
            WHEN sv.initial_nodes IS tg.node_count AND sv.final_nodes IS tg.c_uops THEN 'same counts'
            ELSE 'differs' END AS verdict,
       sv.svod_commit, sv.run_id AS svod_run_id, tg.sha AS tinygrad_sha, tg.version AS tinygrad_version,
       tg.backend AS tinygrad_backend, tg.run_id AS tinygrad_run_id
FROM idx LEFT JOIN sv ON sv.kernel_index = idx.kernel_index LEFT JOIN tg ON tg.kernel_index = idx.kernel_index
ORDER BY idx.kernel_index
