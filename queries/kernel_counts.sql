-- title: Kernel count per case per commit
-- description: For each case and stored run, oldest commit first (history order): the case's status, its schedule
--   items, its kernels (items with generated programs), and the change in kernels since the previous commit.
-- parameters: case_name (optional: one case name; empty for all cases)
-- From the base tables, starting at the case's memberships when one case is asked for.
SELECT k.name AS "case", c.committed_at, c.sha, c.version, s.name AS suite, r.backend, m.status, cr.item_count,
       cr.kernel_count,
       cr.kernel_count - lag(cr.kernel_count) OVER (PARTITION BY k.name, s.name, r.backend
                                                    ORDER BY c.history_rank, r.id) AS change
FROM cases k CROSS JOIN case_set_members m ON m.case_id = k.id
CROSS JOIN runs r ON r.case_set_id = m.case_set_id AND r.is_current = 1
JOIN case_results cr ON cr.id = m.case_result_id JOIN tinygrad_commits c ON c.id = r.commit_id
JOIN suites s ON s.id = r.suite_id
WHERE :case_name = '' OR k.name = :case_name
ORDER BY "case", suite, r.backend, c.history_rank, r.id
