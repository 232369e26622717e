-- title: Svod pattern matches per op of a case
-- description: How many `pattern matched` trace events the latest stored Svod log of a case (or of one Svod
--   commit) has per op_key, most first, with each op's share of all matches.
-- parameters: case_name (case name, e.g. add), svod_commit (optional: a Svod commit, sha or prefix; empty for the
--   latest log of the case)
WITH sr AS (
  SELECT r.id FROM svod_runs r JOIN cases c ON c.id = r.case_id
  WHERE c.name = :case_name
    AND (:svod_commit = '' OR r.svod_commit = :svod_commit OR r.svod_commit LIKE :svod_commit || '%')
  ORDER BY r.ingested_at DESC, r.id DESC LIMIT 1
)
SELECT pm.op_key, pm.count, round(100.0 * pm.count / sum(pm.count) OVER (), 1) AS percent,
       r.id AS run_id, r.svod_commit, r.ingested_at
FROM svod_pattern_matches pm JOIN svod_runs r ON r.id = pm.run_id
WHERE pm.run_id = (SELECT id FROM sr)
ORDER BY pm.count DESC, pm.op_key
