-- title: Kernels changed between two commits (AST level)
-- description: AST level: per case, the schedule items (kernels and copies, by AST hash) that commit b added
--   or removed compared with commit a, on runs of the same suite and backend. A kernel whose AST changed shows as
--   one removed and one added row; a case present on one side only shows all its kernels. An unknown commit gives
--   one row saying so.
-- parameters: a (commit: sha, sha prefix or version), b (commit: sha, sha prefix or version)
WITH ca AS (
  SELECT commit_id AS id FROM v_commits
  WHERE :a <> '' AND (sha = :a OR sha LIKE :a || '%' OR version = :a)
  ORDER BY sha = :a DESC, history_rank DESC LIMIT 1
), cb AS (
  SELECT commit_id AS id FROM v_commits
  WHERE :b <> '' AND (sha = :b OR sha LIKE :b || '%' OR version = :b)
  ORDER BY sha = :b DESC, history_rank DESC LIMIT 1
), pairs AS (
  SELECT ra.id AS run_a, rb.id AS run_b, s.name AS suite, ra.backend
  FROM runs ra
  JOIN runs rb ON rb.suite_id = ra.suite_id AND rb.backend = ra.backend AND rb.is_current = 1
  JOIN suites s ON s.id = ra.suite_id
  WHERE ra.is_current = 1 AND ra.commit_id = (SELECT id FROM ca) AND rb.commit_id = (SELECT id FROM cb)
), sides AS (  -- each pair from both ends: the side's run and the run on the other side
  SELECT 'a' AS side, suite, backend, run_a AS run_id, run_b AS other_run_id FROM pairs
  UNION ALL
  SELECT 'b', suite, backend, run_b, run_a FROM pairs
), side_kernels AS MATERIALIZED (  -- only cases whose results differ or that one side lacks (equal, equal kernels)
  SELECT s.side, s.suite, s.backend, k.name AS "case", kn.hash AS kernel_hash, count(*) AS n,
         min(si.position) AS first_position, group_concat(si.position) AS positions, max(kn.name) AS kernel_name,
         max(si.root_op) AS root_op, max(kn.node_count) AS node_count
  FROM sides s JOIN runs r ON r.id = s.run_id JOIN runs other ON other.id = s.other_run_id
  JOIN case_set_members m ON m.case_set_id = r.case_set_id JOIN cases k ON k.id = m.case_id
  LEFT JOIN case_set_members om ON om.case_set_id = other.case_set_id AND om.case_id = m.case_id
  CROSS JOIN schedule_items si ON si.case_result_id = m.case_result_id JOIN kernels kn ON kn.id = si.kernel_id
  WHERE om.case_result_id IS NOT m.case_result_id
  GROUP BY s.side, s.suite, s.backend, k.name, kn.hash
), ka AS (
  SELECT * FROM side_kernels WHERE side = 'a'
), kb AS (
  SELECT * FROM side_kernels WHERE side = 'b'
)
SELECT * FROM (
  SELECT CASE WHEN kb.n IS NULL THEN 'removed' ELSE 'count changed' END AS change, ka.suite, ka.backend, ka."case",
         ka.first_position AS position, ka.positions AS positions_a, kb.positions AS positions_b, ka.kernel_name,
         ka.root_op, ka.node_count, ka.kernel_hash, :a || ' ' || :b || ' ' || ka."case" AS diff
  FROM ka LEFT JOIN kb ON kb.suite = ka.suite AND kb.backend = ka.backend AND kb."case" = ka."case"
                      AND kb.kernel_hash = ka.kernel_hash
  WHERE kb.n IS NULL OR kb.n <> ka.n
  UNION ALL
  SELECT 'added', kb.suite, kb.backend, kb."case", kb.first_position, NULL, kb.positions, kb.kernel_name, kb.root_op,
         kb.node_count, kb.kernel_hash, :a || ' ' || :b || ' ' || kb."case"
  FROM kb LEFT JOIN ka ON ka.suite = kb.suite AND ka.backend = kb.backend AND ka."case" = kb."case"
                      AND ka.kernel_hash = kb.kernel_hash
  WHERE ka.n IS NULL
  ORDER BY 4, 2, 3, 5, 1 DESC
)
UNION ALL
SELECT 'no stored commit matches ' || CASE WHEN NOT EXISTS (SELECT 1 FROM ca) THEN 'a=' || quote(:a)
                                           ELSE 'b=' || quote(:b) END,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM ca) OR NOT EXISTS (SELECT 1 FROM cb)
