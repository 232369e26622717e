-- title: Kernels whose generated source changed between two commits
-- description: Source level (what process_replay compares): per case and schedule position at both commits (same
--   suite and backend), each renderer whose generated source (or error) differs, with the kernel names and whether
--   the AST changed too (ast_changed 0: same AST, only codegen differs). kernels_changed is the AST-level view.
--   An unknown commit gives one row saying so.
-- parameters: a (commit: sha, sha prefix or version), b (commit: sha, sha prefix or version),
--   renderer (optional: one renderer, e.g. C; empty for all)
WITH ca AS (
  SELECT commit_id AS id FROM v_commits
  WHERE :a <> '' AND (sha = :a OR sha LIKE :a || '%' OR version = :a)
  ORDER BY sha = :a DESC, history_rank DESC LIMIT 1
), cb AS (
  SELECT commit_id AS id FROM v_commits
  WHERE :b <> '' AND (sha = :b OR sha LIKE :b || '%' OR version = :b)
  ORDER BY sha = :b DESC, history_rank DESC LIMIT 1
), pairs AS (
  SELECT ra.id AS run_a, rb.id AS run_b, s.name AS suite, ra.backend FROM runs ra
  JOIN runs rb ON rb.suite_id = ra.suite_id AND rb.backend = ra.backend AND rb.is_current = 1
  JOIN suites s ON s.id = ra.suite_id
  WHERE ra.is_current = 1 AND ra.commit_id = (SELECT id FROM ca) AND rb.commit_id = (SELECT id FROM cb)
), differing AS MATERIALIZED (  -- only cases whose results differ: equal results have equal sources
  SELECT p.suite, p.backend, k.name AS "case", ma.case_result_id AS result_a, mb.case_result_id AS result_b
  FROM pairs p JOIN runs r ON r.id = p.run_a JOIN runs o ON o.id = p.run_b
  JOIN case_set_members ma ON ma.case_set_id = r.case_set_id
  JOIN case_set_members mb ON mb.case_set_id = o.case_set_id AND mb.case_id = ma.case_id
    AND mb.case_result_id IS NOT ma.case_result_id
  JOIN cases k ON k.id = ma.case_id
)
SELECT * FROM (
  SELECT d.suite, d.backend, d."case", ia.position, pa.renderer, pa.name AS kernel_a, pb.name AS kernel_b,
         ia.kernel_id <> ib.kernel_id AS ast_changed, ba.hash AS source_a, bb.hash AS source_b,
         pa.error AS error_a, pb.error AS error_b, :a || ' ' || :b || ' ' || d."case" AS diff
  FROM differing d
  JOIN schedule_items ia ON ia.case_result_id = d.result_a
  JOIN schedule_items ib ON ib.case_result_id = d.result_b AND ib.position = ia.position
  JOIN programs pa ON pa.schedule_item_id = ia.id AND (:renderer = '' OR pa.renderer = :renderer)
  JOIN programs pb ON pb.schedule_item_id = ib.id AND pb.renderer = pa.renderer
  LEFT JOIN blobs ba ON ba.id = pa.source_blob_id LEFT JOIN blobs bb ON bb.id = pb.source_blob_id
  WHERE pa.source_blob_id IS NOT pb.source_blob_id OR pa.error IS NOT pb.error
  ORDER BY 3, 4, 5
)
UNION ALL
SELECT NULL, NULL, 'no stored commit matches ' || CASE WHEN NOT EXISTS (SELECT 1 FROM ca) THEN 'a=' || quote(:a)
                                                       ELSE 'b=' || quote(:b) END,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM ca) OR NOT EXISTS (SELECT 1 FROM cb)
