-- title: Svod node counts per stage of a case
-- description: For the latest stored Svod run of a case (or of one Svod commit), every stage of every kernel in the
--   order Svod printed them, with its node count, the change since the previous stage of the kernel, where it came
--   from (a tracing event, a [per-stage] line, a [dump-stage] tree, ...) and the tinygrad pass it corresponds to.
-- parameters: case_name (case name, e.g. sum_rows), svod_commit (optional: a Svod commit, sha or prefix; empty for
--   the latest run of the case)
WITH sr AS (
  SELECT r.id FROM svod_runs r JOIN cases c ON c.id = r.case_id
  WHERE c.name = :case_name
    AND (:svod_commit = '' OR r.svod_commit = :svod_commit OR r.svod_commit LIKE :svod_commit || '%')
  ORDER BY r.ingested_at DESC, r.id DESC LIMIT 1
)
SELECT kernel_index, kernel_name, label AS stage, node_count,
       node_count - lag(node_count) OVER (PARTITION BY kernel_index ORDER BY seq) AS change,
       source, tinygrad_pass, canonical, substr(tree_hash, 1, 12) AS tree, file_position, line_no, run_id, svod_commit
FROM v_svod_stages
WHERE run_id = (SELECT id FROM sr)
ORDER BY kernel_index IS NOT NULL, kernel_index, seq
