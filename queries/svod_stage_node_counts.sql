-- title: Svod node counts per stage of a case
-- description: For the latest stored Svod log of a case (or of one Svod commit), every codegen stage of every
--   kernel in log order with its node count and the change since the previous stage. Stages come from
--   `[per-stage]` lines; a `[dump-stage]` tree without a per-stage line is counted from the tree (see source).
-- parameters: case_name (case name, e.g. add), svod_commit (optional: a Svod commit, sha or prefix; empty for the
--   latest log of the case)
WITH sr AS (
  SELECT r.id FROM svod_runs r JOIN cases c ON c.id = r.case_id
  WHERE c.name = :case_name
    AND (:svod_commit = '' OR r.svod_commit = :svod_commit OR r.svod_commit LIKE :svod_commit || '%')
  ORDER BY r.ingested_at DESC, r.id DESC LIMIT 1
)
SELECT s.kernel_index, k.name AS kernel_name, s.stage, s.node_count,
       s.node_count - lag(s.node_count) OVER (PARTITION BY s.kernel_index ORDER BY s.line_no) AS change,
       s.source, s.line_no, s.run_id, s.svod_commit, s.ingested_at
FROM v_svod_stages s LEFT JOIN svod_kernels k ON k.run_id = s.run_id AND k.kernel_index = s.kernel_index
WHERE s.run_id = (SELECT id FROM sr)
ORDER BY s.kernel_index, s.line_no
