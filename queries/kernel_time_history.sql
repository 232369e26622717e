-- title: Kernel run times of a case over commits (one machine)
-- description: Each timed kernel of a case at every commit timed with --time, in history order, on one machine
--   (times of different machines are never mixed): best and median ns over the timed runs, their spread, GFLOP/s
--   and GB/s from tinygrad's estimates, and the ratio of the best time to the same kernel position at the previous
--   timed commit. The latest timing of each commit counts. `calibration_ns` (the run's reference loop) tells a
--   loaded machine from a slower kernel.
-- parameters: case_name (case name, e.g. matmul), machine (optional: machine fingerprint or prefix; default the
--   machine that timed this case most)
WITH chosen AS (
  SELECT machine FROM v_kernel_times
  WHERE "case" = :case_name AND (:machine = '' OR machine LIKE :machine || '%')
  GROUP BY machine ORDER BY count(*) DESC, machine LIMIT 1
)
SELECT t.sha, t.subject, t.committed_at, t.history_rank, t.machine, t.position, t.kernel_name, t.status, t.ns_min,
       t.ns_median, t.spread, t.ops, t.mem_bytes, t.gflops, t.gbps,
       round(1.0 * t.ns_min / lag(t.ns_min) OVER (PARTITION BY t.position ORDER BY t.history_rank, t.session_id), 3)
         AS ratio_to_previous,
       t.calibration_ns, t.error, 'time ' || :case_name AS chart
FROM v_kernel_times t
WHERE t."case" = :case_name AND t.machine = (SELECT machine FROM chosen)
ORDER BY t.history_rank, t.session_id, t.position
