-- title: Case results that differ between two commits
-- description: Cases whose stored result (schedule, kernels, sources, pattern matches) differs between commit a and
--   commit b on runs of the same suite and backend, plus cases present on one side only. An unknown commit gives
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
), sides AS (  -- each pair's two runs' cases, from the base tables (a view over every run would be read whole)
  SELECT p.run_a AS side_run, 'a' AS side, p.suite, p.backend FROM pairs p
  UNION ALL SELECT p.run_b, 'b', p.suite, p.backend FROM pairs p
), cases_of AS (
  SELECT x.side, x.suite, x.backend, k.name AS "case", m.status, cr.hash AS result_hash, cr.item_count,
         cr.kernel_count
  FROM sides x CROSS JOIN runs r ON r.id = x.side_run CROSS JOIN case_set_members m ON m.case_set_id = r.case_set_id
  JOIN cases k ON k.id = m.case_id JOIN case_results cr ON cr.id = m.case_result_id
), xa AS (
  SELECT * FROM cases_of WHERE side = 'a'
), xb AS (
  SELECT * FROM cases_of WHERE side = 'b'
)
SELECT * FROM (
  SELECT CASE WHEN xb."case" IS NULL THEN 'removed' WHEN xa.status <> xb.status THEN 'status changed'
              ELSE 'changed' END AS change,
         xa.suite, xa.backend, xa."case", xa.status AS status_a, xb.status AS status_b, xa.kernel_count AS kernels_a,
         xb.kernel_count AS kernels_b, xa.item_count AS items_a, xb.item_count AS items_b,
         substr(xa.result_hash, 1, 12) AS result_a, substr(xb.result_hash, 1, 12) AS result_b,
         :a || ' ' || :b || ' ' || xa."case" AS diff
  FROM xa LEFT JOIN xb ON xb.suite = xa.suite AND xb.backend = xa.backend AND xb."case" = xa."case"
  WHERE xb."case" IS NULL OR xb.result_hash <> xa.result_hash
  UNION ALL
  SELECT 'added', xb.suite, xb.backend, xb."case", NULL, xb.status, NULL, xb.kernel_count, NULL, xb.item_count, NULL,
         substr(xb.result_hash, 1, 12), :a || ' ' || :b || ' ' || xb."case"
  FROM xb LEFT JOIN xa ON xa.suite = xb.suite AND xa.backend = xb.backend AND xa."case" = xb."case"
  WHERE xa."case" IS NULL
  ORDER BY 4, 2, 3
)
UNION ALL
SELECT 'no stored commit matches ' || CASE WHEN NOT EXISTS (SELECT 1 FROM ca) THEN 'a=' || quote(:a)
                                           ELSE 'b=' || quote(:b) END,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM ca) OR NOT EXISTS (SELECT 1 FROM cb)
