-- title: Kernels slower at commit b than at commit a (same machine)
-- description: Kernels (matched by case and schedule position) whose best time at commit b exceeds their best time
--   at commit a by more than `threshold` (a fraction, default 0.1) and by more than both timings' measured noise
--   (spread x best time of each). Only timings of the same machine are paired: a commit pair timed on different
--   machines gives no rows. Slowest first.
-- parameters: a (commit: sha, sha prefix or version), b (commit: sha, sha prefix or version), threshold (optional:
--   fraction, e.g. 0.1 for 10%; default 0.1)
WITH ca AS (
  SELECT sha FROM v_commits WHERE :a <> '' AND (sha = :a OR sha LIKE :a || '%' OR version = :a)
  ORDER BY sha = :a DESC, history_rank DESC LIMIT 1
), cb AS (
  SELECT sha FROM v_commits WHERE :b <> '' AND (sha = :b OR sha LIKE :b || '%' OR version = :b)
  ORDER BY sha = :b DESC, history_rank DESC LIMIT 1
), limit_ AS (
  SELECT CASE WHEN :threshold = '' THEN 0.1 ELSE CAST(:threshold AS REAL) END AS fraction
)
SELECT ta.machine, ta.suite, ta."case", ta.position, ta.kernel_name AS kernel_a, tb.kernel_name AS kernel_b,
       ta.ns_min AS ns_a, tb.ns_min AS ns_b, round(1.0 * tb.ns_min / ta.ns_min, 3) AS ratio,
       round(ta.spread * ta.ns_min + tb.spread * tb.ns_min) AS noise_ns, ta.spread AS spread_a,
       tb.spread AS spread_b, ta.kernel_hash = tb.kernel_hash AS same_ast, ta.sha AS sha_a, tb.sha AS sha_b
FROM v_kernel_times ta
JOIN v_kernel_times tb ON tb."case" = ta."case" AND tb.position = ta.position AND tb.machine = ta.machine
  AND tb.backend = ta.backend AND tb.suite = ta.suite
WHERE ta.sha = (SELECT sha FROM ca) AND tb.sha = (SELECT sha FROM cb) AND ta.status = 'ok' AND tb.status = 'ok'
  AND tb.ns_min > ta.ns_min * (1 + (SELECT fraction FROM limit_))
  AND tb.ns_min - ta.ns_min > coalesce(ta.spread * ta.ns_min, 0) + coalesce(tb.spread * tb.ns_min, 0)
ORDER BY 1.0 * tb.ns_min / ta.ns_min DESC
