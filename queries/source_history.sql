-- title: Generated-source history of a case for a renderer
-- description: One row per commit, oldest first in history order (git's first-parent line, releases by version),
--   where the source a renderer generated for a case differs from the previous stored commit of the same suite and
--   backend: the first commit, then each change, with the new source.
-- parameters: case_name (case name, e.g. matmul), renderer (renderer name, e.g. C)
WITH runs_of_case AS (  -- from the case's memberships to the runs that hold them (not from every run)
  SELECT r.id AS run_id, m.case_result_id, c.committed_at, c.history_rank, c.sha, c.version, s.name AS suite,
         r.backend, m.status
  FROM cases k CROSS JOIN case_set_members m ON m.case_id = k.id
  CROSS JOIN runs r ON r.case_set_id = m.case_set_id AND r.is_current = 1
  JOIN tinygrad_commits c ON c.id = r.commit_id JOIN suites s ON s.id = r.suite_id
  WHERE k.name = :case_name
), src AS (  -- once per distinct case result, not once per run: most commits share their predecessor's
  SELECT case_result_id, count(*) AS kernels,
         group_concat(coalesce(source_hash, 'none:' || coalesce(error, '')), ',') AS signature,
         group_concat(substr(coalesce(source_hash, '-'), 1, 12), ',') AS source_hashes,
         group_concat(coalesce(kernel_name, '?'), ', ') AS kernel_names,
         group_concat('// ' || position || ': ' || coalesce(kernel_name, '?') || char(10)
                      || coalesce(source, '/* no source: ' || coalesce(error, '?') || ' */'), char(10) || char(10))
           AS source
  FROM (SELECT si.case_result_id, si.position, p.name AS kernel_name, b.hash AS source_hash, b.text AS source, p.error
        FROM (SELECT DISTINCT case_result_id FROM runs_of_case) d  -- CROSS JOIN: from the few results, not all items
        CROSS JOIN schedule_items si ON si.case_result_id = d.case_result_id
        JOIN programs p ON p.schedule_item_id = si.id AND p.renderer = :renderer
        LEFT JOIN blobs b ON b.id = p.source_blob_id
        ORDER BY si.case_result_id, si.position)
  GROUP BY case_result_id
), sig AS (  -- each distinct signature as a small number: the window sort below carries numbers, not texts
  SELECT case_result_id, dense_rank() OVER (ORDER BY signature) AS sig_id FROM src
), hist AS (  -- only the signature goes through the window sort, the sources join the few rows kept
  SELECT rc.run_id, rc.case_result_id, rc.committed_at, rc.history_rank, rc.sha, rc.version, rc.suite, rc.backend,
         rc.status, coalesce(sig.sig_id, 0) AS signature,
         lag(coalesce(sig.sig_id, 0)) OVER (PARTITION BY rc.suite, rc.backend ORDER BY rc.history_rank, rc.run_id)
           AS previous,
         lag(rc.sha) OVER (PARTITION BY rc.suite, rc.backend ORDER BY rc.history_rank, rc.run_id) AS previous_sha
  FROM runs_of_case rc LEFT JOIN sig ON sig.case_result_id = rc.case_result_id
)
SELECT h.committed_at, h.sha, h.version, h.suite, h.backend, h.status,
       CASE WHEN h.previous IS NULL THEN 'first' WHEN h.signature = 0 THEN 'gone' ELSE 'changed' END AS change,
       coalesce(src.kernels, 0) AS kernels, src.kernel_names, src.source_hashes, src.source,
       CASE WHEN h.previous_sha IS NOT NULL THEN h.previous_sha || ' ' || h.sha || ' ' || :case_name END AS diff,
       'uops ' || :case_name || ' ' || :renderer AS chart
FROM hist h LEFT JOIN src ON src.case_result_id = h.case_result_id
WHERE h.previous IS NULL OR h.previous <> h.signature
ORDER BY h.suite, h.backend, h.history_rank, h.run_id
