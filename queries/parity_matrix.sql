-- title: Svod against tinygrad, stage by stage
-- description: For a case: every Svod run × every current tinygrad run (history order) × every Svod stage with a
--   tree or a node count, as `tgstore parity` decided and stored it (svod/parity.py decides, parity_store.py stores;
--   this reads). "(node count)": only counts compared; missing in tinygrad: nothing to compare with. A pair not
--   decided yet (a tinygrad run ingested after the Svod run) is "not decided": run `tgstore parity-refresh CASE`.
--   Kernels are paired by name, else structure, else position; the renderer is the Svod kernel's.
-- parameters: case_name (case name, e.g. sum_rows), svod_run (optional: one Svod run id; empty for all),
--   commit (optional: one tinygrad commit, sha, prefix or version; empty for all)
WITH pairs AS (
  SELECT r.id AS svod_run, rc.run_id AS tinygrad_run, rc.sha, rc.version, rc.history_rank
  FROM svod_runs r JOIN cases c ON c.id = r.case_id JOIN v_run_cases rc ON rc."case" = c.name
  WHERE c.name = :case_name AND (:svod_run = '' OR r.id = CAST(:svod_run AS INTEGER))
    AND (:commit = '' OR rc.sha = :commit OR rc.sha LIKE :commit || '%' OR rc.version = :commit)
), decided AS (
  SELECT p.*, v.kernel_index, v.svod_name, v.tinygrad_position, v.tinygrad_name, v.renderer, v.stage, v.seq,
         v.svod_nodes, v.tinygrad_nodes, v.basis, v.paired_by, v.why,
         CASE WHEN v.verdict = 'no tinygrad counterpart' THEN 'missing in tinygrad'
              WHEN v.basis = 'node_count' THEN v.verdict || ' (node count)' ELSE v.verdict END AS verdict
  FROM pairs p JOIN svod_parity v ON v.svod_run = p.svod_run AND v.tinygrad_run = p.tinygrad_run
  WHERE v.scope = 'kernel' AND v.kernel_index IS NOT NULL AND v.basis IN ('tree', 'node_count')
    AND v.verdict IN ('equal', 'differs', 'no tinygrad counterpart')
), undecided AS (
  SELECT p.*, s.kernel_index, k.name AS svod_name, NULL AS tinygrad_position, NULL AS tinygrad_name,
         coalesce(k.renderer, 'C') AS renderer, s.label AS stage, 1000000 + m.position AS seq,
         max(s.node_count) AS svod_nodes, NULL AS tinygrad_nodes,
         CASE WHEN max(s.tree_id) IS NULL THEN 'node_count' ELSE 'tree' END AS basis, NULL AS paired_by,
         'run `tgstore parity-refresh ' || :case_name || '`' AS why, 'not decided' AS verdict
  FROM pairs p JOIN svod_stages s ON s.run_id = p.svod_run
  JOIN svod_stage_map m ON m.label = s.label AND m.scope = 'lower'
  LEFT JOIN svod_kernels k ON k.run_id = s.run_id AND k.kernel_index = s.kernel_index
  WHERE s.kernel_index IS NOT NULL AND (s.tree_id IS NOT NULL OR s.node_count IS NOT NULL)
    AND NOT EXISTS (SELECT 1 FROM svod_parity_pairs d WHERE d.svod_run = p.svod_run
                    AND d.tinygrad_run = p.tinygrad_run)
  GROUP BY p.svod_run, p.tinygrad_run, s.kernel_index, s.label
)
SELECT :case_name AS "case", svod_run, kernel_index, svod_name, history_rank, sha, version,
       tinygrad_position, tinygrad_name, renderer, stage, svod_nodes, tinygrad_nodes, verdict, basis, paired_by,
       why, tinygrad_run
FROM (SELECT * FROM decided UNION ALL SELECT * FROM undecided)
ORDER BY svod_run, kernel_index, history_rank, seq
