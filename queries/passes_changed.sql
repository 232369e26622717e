-- title: First pass that differs between two commits, per kernel, with passes added and removed
-- description: Per case, kernel and renderer with stages at both commits (same suite and backend): the pass lists
--   aligned by name and occurrence (k-th pass of a name with the k-th), and the first pass added, removed or with
--   another output graph (kind; its position on each side, empty where a side lacks it; node counts). added and
--   removed list every pass only on b / only on a. Kernels with equal passes are not listed; an unknown commit
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
         pe.name AS pass_name, pe.node_count, g.hash AS graph_hash,
         row_number() OVER (PARTITION BY s.side, s."case", si.position, p.renderer, pe.name
                            ORDER BY pe.position) AS occurrence
  FROM sides s JOIN schedule_items si ON si.case_result_id = s.case_result_id
  JOIN kernels kn ON kn.id = si.kernel_id JOIN programs p ON p.schedule_item_id = si.id
  JOIN pass_entries pe ON pe.pass_list_id = p.pass_list_id LEFT JOIN graphs g ON g.id = pe.graph_id
), pa AS MATERIALIZED (
  SELECT * FROM passes WHERE side = 'a'
), pb AS MATERIALIZED (
  SELECT * FROM passes WHERE side = 'b'
), both_sides AS MATERIALIZED (
  SELECT DISTINCT pa."case", pa.position, pa.renderer FROM pa
  JOIN pb ON pb."case" = pa."case" AND pb.position = pa.position AND pb.renderer = pa.renderer
), aligned AS MATERIALIZED (  -- name + occurrence alignment: matched, removed (a only) and added (b only) passes
  SELECT k."case", k.position, k.renderer, x.pass_position AS pos_a, y.pass_position AS pos_b,
         coalesce(x.pass_name, y.pass_name) AS pass_name,
         CASE WHEN y.pass_name IS NULL THEN 'removed' WHEN y.graph_hash IS NOT x.graph_hash THEN 'changed'
              ELSE 'same' END AS kind
  FROM both_sides k JOIN pa x ON x."case" = k."case" AND x.position = k.position AND x.renderer = k.renderer
  LEFT JOIN pb y ON y."case" = k."case" AND y.position = k.position AND y.renderer = k.renderer
    AND y.pass_name = x.pass_name AND y.occurrence = x.occurrence
  UNION ALL
  SELECT k."case", k.position, k.renderer, NULL, y.pass_position, y.pass_name, 'added'
  FROM both_sides k JOIN pb y ON y."case" = k."case" AND y.position = k.position AND y.renderer = k.renderer
  WHERE NOT EXISTS (SELECT 1 FROM pa x WHERE x."case" = k."case" AND x.position = k.position
                    AND x.renderer = k.renderer AND x.pass_name = y.pass_name AND x.occurrence = y.occurrence)
), differing AS (  -- ordered along side a: a pass added on b sits after the last matched pass before it on b
  SELECT d.*, coalesce(d.pos_a, (SELECT max(m.pos_a) FROM aligned m WHERE m."case" = d."case"
                                 AND m.position = d.position AND m.renderer = d.renderer AND m.pos_b < d.pos_b
                                 AND m.pos_a IS NOT NULL) + 0.5, -0.5) AS sort_key
  FROM aligned d WHERE d.kind <> 'same'
), first AS (
  SELECT "case", position, renderer, pos_a, pos_b, pass_name, kind, min(sort_key) OVER w AS first_key, sort_key,
         group_concat(CASE WHEN kind = 'added' THEN pass_name END, ', ') OVER w AS added,
         group_concat(CASE WHEN kind = 'removed' THEN pass_name END, ', ') OVER w AS removed
  FROM differing
  WINDOW w AS (PARTITION BY "case", position, renderer ORDER BY sort_key, pos_b
               ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
)
SELECT * FROM (
  SELECT f."case", f.position, coalesce(x.kernel_name, y.kernel_name) AS kernel_name, f.renderer,
         coalesce(f.pos_a, f.pos_b) AS pass_position, x.pass_name AS pass_a, y.pass_name AS pass_b,
         x.node_count AS nodes_a, y.node_count AS nodes_b, x.graph_hash AS graph_a, y.graph_hash AS graph_b,
         f.kind, f.pos_a AS pass_position_a, f.pos_b AS pass_position_b, f.added, f.removed,
         :a || ' ' || :b || ' ' || f."case" AS diff
  FROM (SELECT *, row_number() OVER (PARTITION BY "case", position, renderer ORDER BY sort_key, pos_b) AS rn
        FROM first) f
  LEFT JOIN pa x ON x."case" = f."case" AND x.position = f.position AND x.renderer = f.renderer
    AND x.pass_position = f.pos_a
  LEFT JOIN pb y ON y."case" = f."case" AND y.position = f.position AND y.renderer = f.renderer
    AND y.pass_position = f.pos_b
  WHERE f.rn = 1
  ORDER BY 1, 2, 4
)
UNION ALL
SELECT 'no stored commit matches ' || CASE WHEN NOT EXISTS (SELECT 1 FROM ca) THEN 'a=' || quote(:a)
                                           ELSE 'b=' || quote(:b) END,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM ca) OR NOT EXISTS (SELECT 1 FROM cb)
