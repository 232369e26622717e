-- title: Kernel count per case per commit
-- description: For each case and stored run, oldest commit first (history order): the case's status, its schedule
--   items, its kernels (items with generated programs), and the change in kernels since the previous commit.
-- parameters: case_name (optional: one case name; empty for all cases)
SELECT "case", committed_at, sha, version, suite, backend, status, item_count, kernel_count,
       kernel_count - lag(kernel_count) OVER (PARTITION BY "case", suite, backend ORDER BY history_rank, run_id)
         AS change
FROM v_run_cases
WHERE :case_name = '' OR "case" = :case_name
ORDER BY "case", suite, backend, history_rank, run_id
