-- title: Node count after each pass, over commits
-- description: For one case, every codegen pass of every kernel at every stored commit, oldest first in history
--   order (git's first-parent line, releases by version): the node count after the pass and whether it changed the
--   graph. Chart node_count per pass_name over history_rank to see where a pass grew or shrank a kernel.
-- parameters: case_name (case name, e.g. matmul), renderer (optional: one renderer, e.g. C; empty for all),
--   kernel (optional: one kernel position, e.g. 0; empty for all)
SELECT history_rank, sha, version, committed_at, position, kernel_name, renderer, pass_position, pass_name, depth,
       node_count, changed, graph_hash AS graph, 'pass_nodes ' || :case_name || ' ' || renderer AS chart
FROM v_passes
WHERE "case" = :case_name AND scope = 'lower' AND (:renderer = '' OR renderer = :renderer)
  AND (:kernel = '' OR position = CAST(:kernel AS INTEGER))
ORDER BY position, renderer, history_rank, run_id, pass_position
