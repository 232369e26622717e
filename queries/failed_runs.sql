-- title: Failed runs
-- description: Runs that did not finish cleanly (failed, timeout, or partial: some cases raised), newest first,
--   with the run's error, its failing cases, the end of the first failing case's traceback and of stderr.
-- parameters: none
SELECT r.run_id, r.sha, r.version, r.committed_at, r.suite, r.backend, r.status, r.error,
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
ORDER BY r.committed_at DESC, r.run_id DESC
