-- title: Stored commits
-- description: Every stored tinygrad commit, newest first in history order (git's first-parent line; releases by
--   version), with its runs: how many, their statuses, and the cases they hold. Use a sha prefix or version from
--   here as a parameter of the other queries.
-- parameters: none
-- A run's case count is its case set's (stored once), not a count over every run's cases.
SELECT c.sha, c.version, c.committed_at, c.subject, c.history_rank, count(r.id) AS runs,
       group_concat(DISTINCT r.status) AS statuses, group_concat(DISTINCT r.backend) AS backends,
       coalesce(sum(cs.case_count), 0) AS case_runs
FROM tinygrad_commits c LEFT JOIN runs r ON r.commit_id = c.id AND r.is_current = 1
LEFT JOIN case_sets cs ON cs.id = r.case_set_id
GROUP BY c.id
ORDER BY c.history_rank DESC
