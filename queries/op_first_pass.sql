-- title: The pass in which an op first appears
-- description: For each kernel of a case at a commit (default: the newest commit in history order that has the
--   case), the first top-level codegen pass whose output graph contains the op (an op name such as WMMA, STACK,
--   SPECIAL), with that pass's node count and how many nodes of the op it holds. Nested passes (run on a part of
--   the kernel inside another pass) are left out. Kernels whose passes never produce the op
--   are not listed. An unknown commit gives one row saying so.
-- parameters: case_name (case name, e.g. matmul), op (an op name, e.g. SPECIAL),
--   commit (optional: sha, sha prefix or version; empty for the newest)
WITH c AS (
  SELECT commit_id AS id, sha FROM v_commits
  WHERE (:commit = '' AND sha = (SELECT sha FROM v_run_cases WHERE "case" = :case_name
                                 ORDER BY history_rank DESC, run_id DESC LIMIT 1))
     OR (:commit <> '' AND (sha = :commit OR sha LIKE :commit || '%' OR version = :commit))
  ORDER BY sha = :commit DESC, history_rank DESC LIMIT 1
), results AS (
  SELECT DISTINCT rc.case_result_id FROM runs r JOIN run_cases rc ON rc.run_id = r.id
  JOIN cases k ON k.id = rc.case_id AND k.name = :case_name
  WHERE r.commit_id = (SELECT id FROM c) AND r.is_current = 1
), hits AS (
  SELECT si.position, kn.name AS kernel_name, p.renderer, pe.position AS pass_position, pe.name AS pass_name,
         pe.node_count, go.count AS op_count,
         row_number() OVER (PARTITION BY si.position, p.renderer ORDER BY pe.position) AS rn
  FROM results d JOIN schedule_items si ON si.case_result_id = d.case_result_id
  JOIN kernels kn ON kn.id = si.kernel_id JOIN programs p ON p.schedule_item_id = si.id
  JOIN pass_entries pe ON pe.pass_list_id = p.pass_list_id AND pe.depth = 0
  JOIN graph_ops go ON go.graph_id = pe.graph_id AND go.op = upper(:op)
)
SELECT * FROM (
  SELECT position, kernel_name, renderer, pass_position, pass_name, node_count, op_count, (SELECT sha FROM c) AS sha
  FROM hits WHERE rn = 1 ORDER BY position, renderer
)
UNION ALL
SELECT NULL, 'no stored commit matches ' || quote(:commit), NULL, NULL, NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM c)
