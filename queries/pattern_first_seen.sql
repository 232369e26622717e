-- title: When a pattern first appeared
-- description: PatternMatcher rules whose rewrite function is named exactly, or whose UPat contains, the given
--   text: the first and last stored commit (in history order: git's first-parent line, releases by version) that
--   has each rule, and in how many stored commits it is present.
-- parameters: pattern (a rewrite function name, or text to find in the UPat, e.g. Ops.ADD)
WITH present AS (
  SELECT DISTINCT cp.matcher, cp.upat, cp.function_name, cp.ops, cp.file, cp.line, cp.sha, cp.version,
         cp.committed_at, cp.history_rank
  FROM v_commit_patterns cp
  WHERE :pattern <> '' AND (cp.function_name = :pattern OR cp.upat LIKE '%' || :pattern || '%')
), ranked AS (
  SELECT *,
         row_number() OVER (PARTITION BY matcher, upat, function_name ORDER BY history_rank) AS rn,
         first_value(sha) OVER (PARTITION BY matcher, upat, function_name ORDER BY history_rank DESC) AS last_sha,
         first_value(committed_at) OVER (PARTITION BY matcher, upat, function_name ORDER BY history_rank DESC)
           AS last_committed_at,
         count(*) OVER (PARTITION BY matcher, upat, function_name) AS commits_present
  FROM present
)
SELECT matcher, function_name, ops, file, line, sha AS first_sha, version AS first_version,
       committed_at AS first_committed_at, last_sha, last_committed_at, commits_present, upat
FROM ranked
WHERE rn = 1
ORDER BY history_rank, matcher, function_name, line
