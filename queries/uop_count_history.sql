-- title: UOp count of a case over time
-- description: For every stored run of a case, oldest commit first in history order: how many schedule items and
--   kernels it has, the total number of UOp nodes in their ASTs, the largest AST, and the change in total nodes
--   since the previous commit (same suite and backend).
-- parameters: case_name (case name, e.g. matmul)
-- From the base tables: the case's current runs through its case-set memberships, and the node counts once per
-- distinct case result (a view over every run, and a count per run, are linear in the history's length).
WITH runs_of AS (
  SELECT r.id AS run_id, r.commit_id, r.suite_id, r.backend, m.case_result_id, m.status
  FROM cases k CROSS JOIN case_set_members m ON m.case_id = k.id
  CROSS JOIN runs r ON r.case_set_id = m.case_set_id AND r.is_current = 1
  WHERE k.name = :case_name
), per_result AS (
  SELECT cr.id, cr.item_count, cr.kernel_count, coalesce(sum(kn.node_count), 0) AS uop_nodes,
         max(kn.node_count) AS largest_ast
  FROM (SELECT DISTINCT case_result_id FROM runs_of) d JOIN case_results cr ON cr.id = d.case_result_id
  LEFT JOIN schedule_items si ON si.case_result_id = cr.id LEFT JOIN kernels kn ON kn.id = si.kernel_id
  GROUP BY cr.id
)
SELECT c.committed_at, c.sha, c.version, s.name AS suite, r.backend, :case_name AS "case", r.status, p.item_count,
       p.kernel_count, p.uop_nodes, p.largest_ast,
       p.uop_nodes - lag(p.uop_nodes) OVER (PARTITION BY s.name, r.backend ORDER BY c.history_rank, r.run_id)
         AS change,
       'kernels ' || :case_name AS chart
FROM runs_of r JOIN per_result p ON p.id = r.case_result_id JOIN tinygrad_commits c ON c.id = r.commit_id
JOIN suites s ON s.id = r.suite_id
ORDER BY suite, r.backend, c.history_rank, r.run_id
