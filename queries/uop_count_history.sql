-- title: UOp count of a case over time
-- description: For every stored run of a case, oldest commit first in history order: how many schedule items and
--   kernels it has, the total number of UOp nodes in their ASTs, the largest AST, and the change in total nodes
--   since the previous commit (same suite and backend).
-- parameters: case_name (case name, e.g. matmul)
WITH per_run AS (
  SELECT rc.run_id, rc.committed_at, rc.history_rank, rc.sha, rc.version, rc.suite, rc.backend, rc."case",
         rc.status, rc.item_count, rc.kernel_count,
         (SELECT coalesce(sum(kn.node_count), 0) FROM case_results cr
          JOIN schedule_items si ON si.case_result_id = cr.id JOIN kernels kn ON kn.id = si.kernel_id
          WHERE cr.hash = rc.result_hash) AS uop_nodes,
         (SELECT max(kn.node_count) FROM case_results cr
          JOIN schedule_items si ON si.case_result_id = cr.id JOIN kernels kn ON kn.id = si.kernel_id
          WHERE cr.hash = rc.result_hash) AS largest_ast
  FROM v_run_cases rc WHERE rc."case" = :case_name
)
SELECT committed_at, sha, version, suite, backend, "case", status, item_count, kernel_count, uop_nodes, largest_ast,
       uop_nodes - lag(uop_nodes) OVER (PARTITION BY suite, backend ORDER BY history_rank, run_id) AS change,
       'kernels ' || :case_name AS chart
FROM per_run
ORDER BY suite, backend, history_rank, run_id
