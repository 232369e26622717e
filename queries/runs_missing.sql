-- title: Runs with missing features
-- description: What each run's tinygrad could not provide (an API absent in that era, a renderer that would not
--   build), for the whole run or for one case, newest commit first (history order).
-- parameters: feature (optional: one feature name, e.g. pyrender; empty for all)
-- The joins start from the missing rows (few, and content-addressed for cases) and reach runs through their
-- indexes (CROSS JOIN keeps SQLite from starting at 10,000 runs instead).
SELECT * FROM (
  SELECT 'run' AS level, r.id AS run_id, c.sha, c.version, c.committed_at, c.history_rank, s.name AS suite,
         r.backend, m.case_name AS "case", m.feature, m.reason
  FROM run_missing m CROSS JOIN runs r ON r.id = m.run_id AND r.is_current = 1
  JOIN tinygrad_commits c ON c.id = r.commit_id JOIN suites s ON s.id = r.suite_id
  WHERE :feature = '' OR m.feature = :feature
  UNION ALL
  SELECT 'case', r.id, c.sha, c.version, c.committed_at, c.history_rank, s.name, r.backend, k.name, cm.feature,
         cm.reason
  FROM case_missing cm CROSS JOIN case_set_members csm ON csm.case_result_id = cm.case_result_id
  CROSS JOIN runs r ON r.case_set_id = csm.case_set_id AND r.is_current = 1
  JOIN tinygrad_commits c ON c.id = r.commit_id JOIN suites s ON s.id = r.suite_id JOIN cases k ON k.id = csm.case_id
  WHERE :feature = '' OR cm.feature = :feature
)
ORDER BY history_rank DESC, run_id DESC, level DESC, "case", feature
