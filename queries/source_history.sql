-- title: Generated-source history of a case for a renderer
-- description: One row per commit, oldest first in history order (git's first-parent line, releases by version),
--   where the source a renderer generated for a case differs from the previous stored commit of the same suite and
--   backend: the first commit, then each change, with the new source.
-- parameters: case_name (case name, e.g. matmul), renderer (renderer name, e.g. C)
WITH src AS (
  SELECT run_id, count(*) AS kernels,
         group_concat(coalesce(source_hash, 'none:' || coalesce(error, '')), ',') AS signature,
         group_concat(substr(coalesce(source_hash, '-'), 1, 12), ',') AS source_hashes,
         group_concat(coalesce(kernel_name, '?'), ', ') AS kernel_names,
         group_concat('// ' || position || ': ' || coalesce(kernel_name, '?') || char(10)
                      || coalesce(source, '/* no source: ' || coalesce(error, '?') || ' */'), char(10) || char(10))
           AS source
  FROM (SELECT * FROM v_sources WHERE "case" = :case_name AND renderer = :renderer ORDER BY run_id, position)
  GROUP BY run_id
), hist AS (
  SELECT rc.run_id, rc.committed_at, rc.history_rank, rc.sha, rc.version, rc.suite, rc.backend, rc.status,
         coalesce(src.kernels, 0) AS kernels, src.kernel_names, src.source_hashes, src.source,
         coalesce(src.signature, '') AS signature,
         lag(coalesce(src.signature, '')) OVER (PARTITION BY rc.suite, rc.backend ORDER BY rc.history_rank, rc.run_id)
           AS previous,
         lag(rc.sha) OVER (PARTITION BY rc.suite, rc.backend ORDER BY rc.history_rank, rc.run_id) AS previous_sha
  FROM v_run_cases rc LEFT JOIN src ON src.run_id = rc.run_id
  WHERE rc."case" = :case_name
)
SELECT committed_at, sha, version, suite, backend, status,
       CASE WHEN previous IS NULL THEN 'first' WHEN signature = '' THEN 'gone' ELSE 'changed' END AS change,
       kernels, kernel_names, source_hashes, source,
       CASE WHEN previous_sha IS NOT NULL THEN previous_sha || ' ' || sha || ' ' || :case_name END AS diff,
       'uops ' || :case_name || ' ' || :renderer AS chart
FROM hist
WHERE previous IS NULL OR previous <> signature
ORDER BY suite, backend, history_rank, run_id
