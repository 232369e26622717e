-- title: Stored commits
-- description: Every stored tinygrad commit, newest first, with its runs: how many, their statuses, and the cases
--   they hold. Use a sha prefix or version from here as a parameter of the other queries.
-- parameters: none
SELECT c.sha, c.version, c.committed_at, c.subject, count(DISTINCT r.id) AS runs,
       group_concat(DISTINCT r.status) AS statuses, group_concat(DISTINCT r.backend) AS backends,
       (SELECT count(*) FROM run_cases rc JOIN runs x ON x.id = rc.run_id WHERE x.commit_id = c.id) AS case_runs
FROM tinygrad_commits c LEFT JOIN runs r ON r.commit_id = c.id
GROUP BY c.id
ORDER BY c.committed_at DESC, c.id DESC
