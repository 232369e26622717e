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
), hits AS (
  SELECT p.position, p.kernel_name, p.renderer, p.pass_position, p.pass_name, p.node_count, go.count AS op_count,
         row_number() OVER (PARTITION BY p.position, p.renderer ORDER BY p.pass_position) AS rn
  FROM v_passes p JOIN graph_ops go ON go.graph_id = p.graph_id AND go.op = upper(:op)
  WHERE p.sha = (SELECT sha FROM c) AND p."case" = :case_name AND p.scope = 'lower' AND p.depth = 0
)
SELECT * FROM (
  SELECT position, kernel_name, renderer, pass_position, pass_name, node_count, op_count, (SELECT sha FROM c) AS sha
  FROM hits WHERE rn = 1 ORDER BY position, renderer
)
UNION ALL
SELECT NULL, 'no stored commit matches ' || quote(:commit), NULL, NULL, NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM c)
