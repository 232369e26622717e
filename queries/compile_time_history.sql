-- title: Compile time of a case over commits (one machine)
-- description: How long tinygrad took to schedule the case and to lower its kernels for one renderer, at every commit
--   timed with --time or --compile-times, in history order, on one machine (compile times of different machines are
--   never mixed): the scheduling total, the lowering total over the case's kernels, and each top-level named pass
--   added up over the kernels (a pass's time includes the passes nested in it), in ms, with the ratio to the same
--   row at the previous timed commit. The latest timing of each commit counts; `calibration_ns` (the run's reference
--   loop) tells a loaded machine from slower passes.
-- parameters: case_name (case name, e.g. matmul), renderer (optional: default C), machine (optional: machine
--   fingerprint or prefix; default the machine that timed this case most)
WITH chosen AS (
  SELECT machine FROM v_compile_times
  WHERE "case" = :case_name AND (:machine = '' OR machine LIKE :machine || '%')
  GROUP BY machine ORDER BY count(*) DESC, machine LIMIT 1
), rows_ AS (
  SELECT * FROM v_compile_times
  WHERE "case" = :case_name AND machine = (SELECT machine FROM chosen)
    AND renderer IN ('schedule', CASE WHEN :renderer = '' THEN 'C' ELSE :renderer END)
), totals AS (
  SELECT sha, subject, history_rank, machine, calibration_ns,
         CASE WHEN renderer = 'schedule' THEN '(scheduling)' ELSE '(lowering ' || renderer || ')' END AS step,
         sum(total_us) AS us, count(*) AS kernels
  FROM rows_ GROUP BY sha, subject, history_rank, machine, calibration_ns, renderer
), passes AS (
  SELECT r.sha, r.subject, r.history_rank, r.machine, r.calibration_ns,
         CASE WHEN r.renderer = 'schedule' THEN 'schedule: ' ELSE 'lower: ' END || json_extract(n.value, '$[0]') AS step,
         sum(u.value) AS us, count(DISTINCT r.position) AS kernels
  FROM rows_ r JOIN json_each(r.pass_names) n JOIN json_each(r.pass_us) u ON u.key = n.key
  WHERE json_extract(n.value, '$[1]') = 0
  GROUP BY r.sha, r.subject, r.history_rank, r.machine, r.calibration_ns, r.renderer, json_extract(n.value, '$[0]')
), everything AS (SELECT * FROM totals UNION ALL SELECT * FROM passes)
SELECT sha, subject, history_rank, machine, step, kernels, round(us / 1000.0, 3) AS ms,
       round(1.0 * us / lag(us) OVER (PARTITION BY step ORDER BY history_rank), 3) AS ratio_to_previous,
       calibration_ns, 'compile ' || :case_name AS chart
FROM everything
ORDER BY history_rank, step LIKE '(%' DESC, us DESC
