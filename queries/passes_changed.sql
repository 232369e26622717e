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
), pa AS MATERIALIZED (
  SELECT p.* FROM v_passes p WHERE p.run_id IN (SELECT run_a FROM pairs)
  AND p.scope = 'lower' AND (:case_name = '' OR p."case" = :case_name)
), pb AS MATERIALIZED (
  SELECT p.* FROM v_passes p WHERE p.run_id IN (SELECT run_b FROM pairs)
  AND p.scope = 'lower' AND (:case_name = '' OR p."case" = :case_name)
), kernels AS (
  SELECT DISTINCT pa."case", pa.position, pa.renderer FROM pa
  JOIN pb ON pb."case" = pa."case" AND pb.position = pa.position AND pb.renderer = pa.renderer
), differing AS (
  SELECT k."case", k.position, k.renderer, x.pass_position
  FROM kernels k JOIN pa x ON x."case" = k."case" AND x.position = k.position AND x.renderer = k.renderer
  LEFT JOIN pb y ON y."case" = k."case" AND y.position = k.position AND y.renderer = k.renderer
    AND y.pass_position = x.pass_position
  WHERE y.pass_name IS NULL OR y.pass_name <> x.pass_name OR y.graph_hash IS NOT x.graph_hash
  UNION ALL
  SELECT k."case", k.position, k.renderer, y.pass_position
  FROM kernels k JOIN pb y ON y."case" = k."case" AND y.position = k.position AND y.renderer = k.renderer
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
