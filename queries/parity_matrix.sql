-- title: Svod against tinygrad, stage by stage
-- description: For a case: every Svod run × every stored tinygrad commit (history order) × every Svod stage of
--   every kernel, whether the two agree. A stage with a Svod tree is equal when its structure, in tinygrad's
--   spelling with ids ignored, is that of the tinygrad graph after the mapped pass (svod_stage_map); a stage with
--   only a node count when the counts are (canonical documents: `tgstore parity`, `tgstore canonical`). Kernels are paired by name, else by position; tinygrad's renderer is
--   the one stored with the Svod kernel (from its test's backend, else its code's kind). `tgstore parity` decides
--   alike (tests/test_parity_agreement.py) and shows the diffs.
-- parameters: case_name (case name, e.g. sum_rows), svod_run (optional: one Svod run id; empty for all),
--   commit (optional: one tinygrad commit, sha, prefix or version; empty for all)
WITH sv AS (
  SELECT s.run_id AS svod_run, s.kernel_index, k.name AS svod_name,
         coalesce(k.renderer, 'C') AS renderer,
         s.label, m.position AS stage_position, m.pass_name, m.pass_input,
         max(t.hash) AS tree_hash, max(s.node_count) AS svod_nodes
  FROM svod_stages s JOIN svod_runs r ON r.id = s.run_id JOIN cases c ON c.id = r.case_id
  JOIN svod_stage_map m ON m.label = s.label AND m.scope = 'lower'
  LEFT JOIN svod_kernels k ON k.run_id = s.run_id AND k.kernel_index = s.kernel_index
  LEFT JOIN svod_trees t ON t.id = s.tree_id
  WHERE c.name = :case_name AND s.kernel_index IS NOT NULL AND (:svod_run = '' OR s.run_id = CAST(:svod_run AS INTEGER))
    AND (s.tree_id IS NOT NULL OR s.node_count IS NOT NULL)
  GROUP BY s.run_id, s.kernel_index, s.label
), tg_kernels AS (
  SELECT k.run_id, k.sha, k.version, k.history_rank, k.position, k.kernel_name, k.kernel_id, kn.norm_hash,
         row_number() OVER (PARTITION BY k.run_id ORDER BY k.position) - 1 AS kernel_order
  FROM v_kernels k JOIN kernels kn ON kn.id = k.kernel_id
  WHERE k."case" = :case_name AND k.root_op = 'SINK'
    AND (:commit = '' OR k.sha = :commit OR k.sha LIKE :commit || '%' OR k.version = :commit)
), paired AS (
  SELECT sv.*, tk.run_id AS tinygrad_run, tk.sha, tk.version, tk.history_rank, tk.position, tk.kernel_name,
         tk.norm_hash AS ast_hash
  FROM sv JOIN tg_kernels tk ON tk.kernel_name = sv.svod_name
    OR (NOT EXISTS (SELECT 1 FROM tg_kernels x WHERE x.run_id = tk.run_id AND x.kernel_name = sv.svod_name)
        AND tk.kernel_order = sv.kernel_index)
), graphs_at AS (
  SELECT p.*,
         (SELECT pe.pass_position FROM v_passes pe WHERE pe.run_id = p.tinygrad_run AND pe."case" = :case_name
            AND pe.scope = 'lower' AND pe.position = p.position AND pe.renderer = p.renderer
            AND pe.pass_name = p.pass_name ORDER BY pe.pass_position LIMIT 1) AS at
  FROM paired p
), tg AS (
  SELECT g.*,
         CASE WHEN g.pass_name IS NULL OR g.at IS NULL THEN NULL
              WHEN NOT g.pass_input THEN (SELECT gr.norm_hash FROM v_passes pe JOIN graphs gr ON gr.id = pe.graph_id
                   WHERE pe.run_id = g.tinygrad_run AND pe."case" = :case_name AND pe.scope = 'lower'
                     AND pe.position = g.position AND pe.renderer = g.renderer AND pe.pass_position = g.at)
              ELSE coalesce((SELECT gr.norm_hash FROM v_passes pe JOIN graphs gr ON gr.id = pe.graph_id
                   WHERE pe.run_id = g.tinygrad_run AND pe."case" = :case_name AND pe.scope = 'lower'
                     AND pe.position = g.position AND pe.renderer = g.renderer AND pe.depth = 0
                     AND pe.pass_position < g.at ORDER BY pe.pass_position DESC LIMIT 1), g.ast_hash) END
           AS tinygrad_hash,
         CASE WHEN g.pass_name IS NULL OR g.at IS NULL THEN NULL
              WHEN NOT g.pass_input THEN (SELECT pe.node_count FROM v_passes pe
                   WHERE pe.run_id = g.tinygrad_run AND pe."case" = :case_name AND pe.scope = 'lower'
                     AND pe.position = g.position AND pe.renderer = g.renderer AND pe.pass_position = g.at)
              ELSE coalesce((SELECT pe.node_count FROM v_passes pe
                   WHERE pe.run_id = g.tinygrad_run AND pe."case" = :case_name AND pe.scope = 'lower'
                     AND pe.position = g.position AND pe.renderer = g.renderer AND pe.depth = 0
                     AND pe.pass_position < g.at ORDER BY pe.pass_position DESC LIMIT 1),
                   (SELECT node_count FROM kernels WHERE id = (SELECT kernel_id FROM tg_kernels t2
                     WHERE t2.run_id = g.tinygrad_run AND t2.position = g.position))) END AS tinygrad_nodes
  FROM graphs_at g
)
SELECT :case_name AS "case", svod_run, kernel_index, svod_name, history_rank, sha, version, position AS tinygrad_position,
       kernel_name AS tinygrad_name, renderer, label AS stage, svod_nodes, tinygrad_nodes,
       CASE WHEN tinygrad_hash IS NULL AND tinygrad_nodes IS NULL THEN 'missing in tinygrad'
            WHEN tree_hash IS NOT NULL THEN CASE WHEN tree_hash = tinygrad_hash THEN 'equal' ELSE 'differs' END
            WHEN svod_nodes = tinygrad_nodes THEN 'equal (node count)' ELSE 'differs (node count)' END AS verdict
FROM tg
ORDER BY svod_run, kernel_index, history_rank, stage_position
