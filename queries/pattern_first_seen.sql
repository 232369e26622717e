-- title: When a pattern first appeared
-- description: PatternMatcher rules whose rewrite function is named exactly, or whose UPat contains, the given
--   text: the first and last stored commit that has each rule, and in how many stored commits it is present.
-- parameters: pattern (a rewrite function name, or text to find in the UPat, e.g. Ops.ADD)
WITH present AS (
  SELECT DISTINCT cp.matcher, cp.upat, cp.function_name, cp.ops, cp.file, cp.line, cp.sha, cp.version,
         cp.committed_at
  FROM v_commit_patterns cp
  WHERE :pattern <> '' AND (cp.function_name = :pattern OR cp.upat LIKE '%' || :pattern || '%')
), ranked AS (
  SELECT *,
         row_number() OVER (PARTITION BY matcher, upat, function_name ORDER BY committed_at, sha) AS rn,
         first_value(sha) OVER (PARTITION BY matcher, upat, function_name ORDER BY committed_at DESC, sha DESC)
           AS last_sha,
         first_value(committed_at) OVER (PARTITION BY matcher, upat, function_name
                                         ORDER BY committed_at DESC, sha DESC) AS last_committed_at
  FROM present
)
SELECT matcher, function_name, ops, file, line, sha AS first_sha, version AS first_version,
       committed_at AS first_committed_at, last_sha, last_committed_at,
       (SELECT count(DISTINCT p2.sha) FROM present p2 WHERE p2.matcher IS ranked.matcher AND p2.upat IS ranked.upat
          AND p2.function_name IS ranked.function_name) AS commits_present,
       upat
FROM ranked
WHERE rn = 1
ORDER BY first_committed_at, matcher, function_name, line
