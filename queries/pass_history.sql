-- title: Node count after each pass, over commits
-- description: For one case, every codegen pass of every kernel, oldest first in history order (git's first-parent
--   line, releases by version), at the first stored commit and at each commit where the case's passes changed (a
--   pass's graph, the pass list or a kernel's name): the node count after the pass and whether it changed the graph.
--   `commits` says how many stored commits of the suite and backend kept that result, up to `until_sha`. The chart
--   draws node_count per pass at every commit.
-- parameters: case_name (case name, e.g. matmul), renderer (optional: one renderer, e.g. C; empty for all),
--   kernel (optional: one kernel position, e.g. 0; empty for all)
WITH runs_of_case AS (  -- from the case's memberships to the runs that hold them, numbers only through the sorts
  SELECT r.id AS run_id, m.case_result_id, c.history_rank, s.name AS suite, r.backend
  FROM cases k CROSS JOIN case_set_members m ON m.case_id = k.id
  CROSS JOIN runs r ON r.case_set_id = m.case_set_id AND r.is_current = 1
  JOIN tinygrad_commits c ON c.id = r.commit_id JOIN suites s ON s.id = r.suite_id
  WHERE k.name = :case_name
), programs_of AS (  -- once per distinct case result, not once per run: most commits share their predecessor's
  SELECT si.case_result_id, si.position, kn.name AS kernel_name, p.renderer, p.pass_list_id
  FROM (SELECT DISTINCT case_result_id FROM runs_of_case) d
  JOIN schedule_items si ON si.case_result_id = d.case_result_id JOIN kernels kn ON kn.id = si.kernel_id
  JOIN programs p ON p.schedule_item_id = si.id
  WHERE p.pass_list_id IS NOT NULL AND (:renderer = '' OR p.renderer = :renderer)
    AND (:kernel = '' OR si.position = CAST(:kernel AS INTEGER))
), signatures AS (  -- each distinct signature as a small number
  SELECT case_result_id, dense_rank() OVER (ORDER BY signature) AS sig_id
  FROM (SELECT case_result_id,
               group_concat(position || ':' || renderer || ':' || kernel_name || ':' || pass_list_id, ',') AS signature
        FROM (SELECT * FROM programs_of ORDER BY case_result_id, position, renderer) GROUP BY case_result_id)
), hist AS (
  SELECT r.*, coalesce(sg.sig_id, 0) IS NOT lag(coalesce(sg.sig_id, 0))
           OVER (PARTITION BY r.suite, r.backend ORDER BY r.history_rank, r.run_id) AS starts
  FROM runs_of_case r LEFT JOIN signatures sg ON sg.case_result_id = r.case_result_id
), numbered AS (
  SELECT *, sum(starts) OVER (PARTITION BY suite, backend ORDER BY history_rank, run_id ROWS UNBOUNDED PRECEDING)
           AS span
  FROM hist
), spans AS (  -- a lone min() makes SQLite take the bare columns from the span's first run
  SELECT min(history_rank) AS history_rank, run_id, case_result_id, suite, backend, span, count(*) AS commits,
         max(history_rank) AS last_rank
  FROM numbered GROUP BY suite, backend, span
)
SELECT sp.history_rank, c.sha, c.version, c.committed_at, sp.commits, last.sha AS until_sha, sp.suite, sp.backend,
       pr.position, pr.kernel_name, pr.renderer, pe.position AS pass_position, pe.name AS pass_name, pe.depth,
       pe.node_count, pe.changed, g.hash AS graph, 'pass_nodes ' || :case_name || ' ' || pr.renderer AS chart
FROM spans sp JOIN tinygrad_commits c ON c.history_rank = sp.history_rank
JOIN tinygrad_commits last ON last.history_rank = sp.last_rank
JOIN programs_of pr ON pr.case_result_id = sp.case_result_id
JOIN pass_entries pe ON pe.pass_list_id = pr.pass_list_id LEFT JOIN graphs g ON g.id = pe.graph_id
ORDER BY pr.position, pr.renderer, sp.suite, sp.backend, sp.history_rank, sp.run_id, pe.position
