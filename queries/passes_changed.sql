-- title: First pass that differs between two commits, per kernel
-- description: For each case, kernel and renderer recorded with stages at both commits (same suite and backend),
--   the first codegen pass whose name or output graph differs: where the kernel's lowering first went another way.
--   Node counts at that pass on both sides; a kernel whose passes are all equal is not listed. An unknown commit
--   gives one row saying so.
-- parameters: a (commit: sha, sha prefix or version), b (commit: sha, sha prefix or version),
--   case_name (optional: one case; empty for all)
WITH ca AS (
  SELECT commit_id AS id FROM v_commits
  WHERE :a <> '' AND (sha = :a OR sha LIKE :a || '%' OR version = :a)
  ORDER BY sha = :a DESC, history_rank DESC LIMIT 1
), cb AS (
  SELECT commit_id AS id FROM v_commits
  WHERE :b <> '' AND (sha = :b OR sha LIKE :b || '%' OR version = :b)
  ORDER BY sha = :b DESC, history_rank DESC LIMIT 1
), pairs AS (
  SELECT ra.id AS run_a, rb.id AS run_b FROM runs ra
  JOIN runs rb ON rb.suite_id = ra.suite_id AND rb.backend = ra.backend AND rb.is_current = 1
  WHERE ra.is_current = 1 AND ra.commit_id = (SELECT id FROM ca) AND rb.commit_id = (SELECT id FROM cb)
), differing_cases AS (  -- only the cases whose results differ: equal results have equal passes
  SELECT k.name AS "case", rca.case_result_id AS result_a, rcb.case_result_id AS result_b FROM pairs
  JOIN run_cases rca ON rca.run_id = pairs.run_a JOIN run_cases rcb ON rcb.run_id = pairs.run_b
    AND rcb.case_id = rca.case_id AND rcb.case_result_id IS NOT rca.case_result_id
  JOIN cases k ON k.id = rca.case_id AND (:case_name = '' OR k.name = :case_name)
), sides AS MATERIALIZED (
  SELECT 'a' AS side, "case", result_a AS case_result_id FROM differing_cases
  UNION ALL
  SELECT 'b', "case", result_b FROM differing_cases
), passes AS MATERIALIZED (  -- their program passes (v_passes, filtered by run, is slower on long histories)
  SELECT s.side, s."case", si.position, kn.name AS kernel_name, p.renderer, pe.position AS pass_position,
         pe.name AS pass_name, pe.node_count, g.hash AS graph_hash
  FROM sides s JOIN schedule_items si ON si.case_result_id = s.case_result_id
  JOIN kernels kn ON kn.id = si.kernel_id JOIN programs p ON p.schedule_item_id = si.id
  JOIN pass_entries pe ON pe.pass_list_id = p.pass_list_id LEFT JOIN graphs g ON g.id = pe.graph_id
), pa AS MATERIALIZED (
  SELECT * FROM passes WHERE side = 'a'
), pb AS MATERIALIZED (
  SELECT * FROM passes WHERE side = 'b'
), both_sides AS (
  SELECT DISTINCT pa."case", pa.position, pa.renderer FROM pa
  JOIN pb ON pb."case" = pa."case" AND pb.position = pa.position AND pb.renderer = pa.renderer
), differing AS (
  SELECT k."case", k.position, k.renderer, x.pass_position
  FROM both_sides k JOIN pa x ON x."case" = k."case" AND x.position = k.position AND x.renderer = k.renderer
  LEFT JOIN pb y ON y."case" = k."case" AND y.position = k.position AND y.renderer = k.renderer
    AND y.pass_position = x.pass_position
  WHERE y.pass_name IS NULL OR y.pass_name <> x.pass_name OR y.graph_hash IS NOT x.graph_hash
  UNION ALL
  SELECT k."case", k.position, k.renderer, y.pass_position
  FROM both_sides k JOIN pb y ON y."case" = k."case" AND y.position = k.position AND y.renderer = k.renderer
  LEFT JOIN pa x ON x."case" = k."case" AND x.position = k.position AND x.renderer = k.renderer
    AND x.pass_position = y.pass_position
  WHERE x.pass_name IS NULL
), first AS (
  SELECT "case", position, renderer, min(pass_position) AS pass_position FROM differing
  GROUP BY "case", position, renderer
)
SELECT * FROM (
  SELECT f."case", f.position, coalesce(x.kernel_name, y.kernel_name) AS kernel_name, f.renderer,
         f.pass_position, x.pass_name AS pass_a, y.pass_name AS pass_b, x.node_count AS nodes_a,
         y.node_count AS nodes_b, x.graph_hash AS graph_a, y.graph_hash AS graph_b,
         :a || ' ' || :b || ' ' || f."case" AS diff
  FROM first f
  LEFT JOIN pa x ON x."case" = f."case" AND x.position = f.position AND x.renderer = f.renderer
    AND x.pass_position = f.pass_position
  LEFT JOIN pb y ON y."case" = f."case" AND y.position = f.position AND y.renderer = f.renderer
    AND y.pass_position = f.pass_position
  ORDER BY 1, 2, 4
)
UNION ALL
SELECT 'no stored commit matches ' || CASE WHEN NOT EXISTS (SELECT 1 FROM ca) THEN 'a=' || quote(:a)
                                           ELSE 'b=' || quote(:b) END,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM ca) OR NOT EXISTS (SELECT 1 FROM cb)
