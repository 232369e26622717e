-- title: Runs with missing features
-- description: What each run's tinygrad could not provide (an API absent in that era, a renderer that would not
--   build), for the whole run or for one case, newest commit first (history order).
-- parameters: feature (optional: one feature name, e.g. pyrender; empty for all)
SELECT * FROM (
  SELECT 'run' AS level, r.run_id, r.sha, r.version, r.committed_at, r.history_rank, r.suite, r.backend,
         m.case_name AS "case", m.feature, m.reason
  FROM run_missing m JOIN v_runs r ON r.run_id = m.run_id
  WHERE r.is_current = 1
  UNION ALL
  SELECT 'case', r.run_id, r.sha, r.version, r.committed_at, r.history_rank, r.suite, r.backend, k.name, cm.feature,
         cm.reason
  FROM case_missing cm JOIN run_cases rc ON rc.case_result_id = cm.case_result_id
  JOIN v_runs r ON r.run_id = rc.run_id JOIN cases k ON k.id = rc.case_id
  WHERE r.is_current = 1
)
WHERE :feature = '' OR feature = :feature
ORDER BY history_rank DESC, run_id DESC, level DESC, "case", feature
