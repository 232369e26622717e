-- title: Failed runs
-- description: Runs that did not finish cleanly (failed, timeout, or partial: some cases raised), newest first in
--   history order, with the run's error, its failing cases, the end of the first failing case's traceback and of
--   stderr. A failed attempt at a commit that has an ok run is listed too, with that run in current_run.
-- parameters: none
SELECT r.run_id, r.sha, r.version, r.committed_at, r.suite, r.backend, r.status,
       CASE WHEN r.is_current THEN 'current' ELSE 'attempt' END AS kind,
       (SELECT cur.id || ' (' || cur.status || ')' FROM runs cur
        WHERE cur.commit_id = x.commit_id AND cur.suite_id = x.suite_id AND cur.backend = x.backend
          AND cur.is_current = 1 AND cur.id <> x.id) AS current_run,
       r.error,
       (SELECT count(*) FROM run_cases rc WHERE rc.run_id = r.run_id AND rc.status <> 'ok') AS failed_cases,
       (SELECT group_concat(name, ', ') FROM (
          SELECT k.name FROM run_cases rc JOIN cases k ON k.id = rc.case_id
          WHERE rc.run_id = r.run_id AND rc.status <> 'ok' ORDER BY k.name)) AS failed_case_names,
       (SELECT substr(b.text, -1500) FROM run_cases rc JOIN cases k ON k.id = rc.case_id
          JOIN blobs b ON b.id = rc.error_blob_id
        WHERE rc.run_id = r.run_id AND rc.status <> 'ok' ORDER BY k.name LIMIT 1) AS case_traceback,
       substr(x.stderr, -2000) AS stderr
FROM v_runs r JOIN runs x ON x.id = r.run_id
WHERE r.status <> 'ok'
ORDER BY r.history_rank DESC, r.run_id DESC
