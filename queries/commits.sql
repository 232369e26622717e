-- title: Stored commits
-- description: Every stored tinygrad commit, newest first in history order (git's first-parent line; releases by
--   version), with its runs: how many, their statuses, and the cases they hold. Use a sha prefix or version from
--   here as a parameter of the other queries.
-- parameters: none
SELECT c.sha, c.version, c.committed_at, c.subject, c.history_rank, count(DISTINCT r.id) AS runs,
       group_concat(DISTINCT r.status) AS statuses, group_concat(DISTINCT r.backend) AS backends,
       (SELECT count(*) FROM run_cases rc JOIN runs x ON x.id = rc.run_id
        WHERE x.commit_id = c.commit_id AND x.is_current = 1) AS case_runs
FROM v_commits c LEFT JOIN runs r ON r.commit_id = c.commit_id AND r.is_current = 1
GROUP BY c.commit_id
ORDER BY c.history_rank DESC
