-- title: When a pattern first appeared
-- description: PatternMatcher rules whose rewrite function is named exactly, or whose UPat contains, the given
--   text: the first and last stored commit (in history order: git's first-parent line, releases by version) that
--   has each rule, and in how many stored commits it is present.
-- parameters: pattern (a rewrite function name, or text to find in the UPat, e.g. Ops.ADD)
WITH matched AS (
  SELECT id, matcher, upat, function_name, ops, file, line FROM patterns
  WHERE :pattern <> '' AND (function_name = :pattern OR upat LIKE '%' || :pattern || '%')
), key_sets AS (  -- per rule, the pattern sets holding it: few sets, shared by many runs
  SELECT DISTINCT mt.matcher, mt.upat, mt.function_name, m.pattern_set_id
  FROM matched mt JOIN pattern_set_members m ON m.pattern_id = mt.id
), set_commits AS (
  SELECT DISTINCT r.pattern_set_id, r.commit_id, c.history_rank FROM runs r JOIN tinygrad_commits c ON c.id = r.commit_id
  WHERE r.is_current = 1 AND r.pattern_set_id IN (SELECT pattern_set_id FROM key_sets)
), per_set AS (  -- each set's commits counted once, not once per rule: rules x commits would be the work
  SELECT pattern_set_id, min(history_rank) AS first_rank, max(history_rank) AS last_rank, count(*) AS commits
  FROM set_commits GROUP BY pattern_set_id
), shared AS (  -- commits holding several of the sets (several suites or backends): counted once per rule below
  SELECT sc.commit_id, sc.pattern_set_id FROM set_commits sc
  WHERE sc.commit_id IN (SELECT commit_id FROM set_commits GROUP BY commit_id HAVING count(*) > 1)
), overcount AS (  -- per rule, the commits its sets' counts hold more than once
  SELECT matcher, upat, function_name, sum(k - 1) AS extra
  FROM (SELECT ks.matcher, ks.upat, ks.function_name, sh.commit_id, count(*) AS k
        FROM key_sets ks JOIN shared sh ON sh.pattern_set_id = ks.pattern_set_id
        GROUP BY ks.matcher, ks.upat, ks.function_name, sh.commit_id)
  GROUP BY matcher, upat, function_name
), spans AS (
  SELECT ks.matcher, ks.upat, ks.function_name, min(ps.first_rank) AS first_rank, max(ps.last_rank) AS last_rank,
         sum(ps.commits) - coalesce((SELECT extra FROM overcount o WHERE o.matcher IS ks.matcher AND o.upat IS ks.upat
                                     AND o.function_name IS ks.function_name), 0) AS commits_present
  FROM key_sets ks JOIN per_set ps ON ps.pattern_set_id = ks.pattern_set_id
  GROUP BY ks.matcher, ks.upat, ks.function_name
), first_place AS (  -- where the rule stood at its first commit
  SELECT sp.matcher, sp.upat, sp.function_name, min(mt.line) AS line, mt.ops, mt.file
  FROM spans sp JOIN tinygrad_commits c ON c.history_rank = sp.first_rank
  JOIN runs r ON r.commit_id = c.id AND r.is_current = 1
  JOIN pattern_set_members m ON m.pattern_set_id = r.pattern_set_id
  JOIN matched mt ON mt.id = m.pattern_id AND mt.matcher IS sp.matcher AND mt.upat IS sp.upat
    AND mt.function_name IS sp.function_name
  GROUP BY sp.matcher, sp.upat, sp.function_name
)
SELECT sp.matcher, sp.function_name, fp.ops, fp.file, fp.line, f.sha AS first_sha, f.version AS first_version,
       f.committed_at AS first_committed_at, l.sha AS last_sha, l.committed_at AS last_committed_at,
       sp.commits_present, sp.upat
FROM spans sp JOIN tinygrad_commits f ON f.history_rank = sp.first_rank
JOIN tinygrad_commits l ON l.history_rank = sp.last_rank
JOIN first_place fp ON fp.matcher IS sp.matcher AND fp.upat IS sp.upat AND fp.function_name IS sp.function_name
ORDER BY sp.first_rank, sp.matcher, sp.function_name, fp.line
