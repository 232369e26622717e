-- title: Patterns added or removed between two commits
-- description: PatternMatcher rules present at one commit and not the other, matched or not. Rules of module- and
--   class-level matchers are complete at every commit: 'removed' and 'added' are changes to the source. Rules of
--   matchers built at run time (matcher empty) are known only where the suite built them: 'not built' and 'built'
--   say that, not that the source changed. A rule is identified across commits by its matcher, UPat and rewrite
--   function, so a rule that only moved to another line is not listed. An unknown commit gives one row saying so.
-- parameters: a (commit: sha, sha prefix or version), b (commit: sha, sha prefix or version)
WITH ca AS (
  SELECT commit_id AS id FROM v_commits
  WHERE :a <> '' AND (sha = :a OR sha LIKE :a || '%' OR version = :a)
  ORDER BY sha = :a DESC, history_rank DESC LIMIT 1
), cb AS (
  SELECT commit_id AS id FROM v_commits
  WHERE :b <> '' AND (sha = :b OR sha LIKE :b || '%' OR version = :b)
  ORDER BY sha = :b DESC, history_rank DESC LIMIT 1
), pa AS (
  SELECT matcher, upat, function_name, min(ops) AS ops, min(file) AS file, min(line) AS line, 1 AS present
  FROM v_commit_patterns WHERE run_id IN (SELECT id FROM runs WHERE commit_id = (SELECT id FROM ca))
  GROUP BY matcher, upat, function_name
), pb AS (
  SELECT matcher, upat, function_name, min(ops) AS ops, min(file) AS file, min(line) AS line, 1 AS present
  FROM v_commit_patterns WHERE run_id IN (SELECT id FROM runs WHERE commit_id = (SELECT id FROM cb))
  GROUP BY matcher, upat, function_name
)
SELECT * FROM (
  SELECT CASE WHEN pa.matcher IS NULL THEN 'not built' ELSE 'removed' END AS change, pa.matcher, pa.function_name,
         pa.ops, pa.file, pa.line, pa.upat
  FROM pa LEFT JOIN pb ON pb.matcher IS pa.matcher AND pb.upat IS pa.upat AND pb.function_name IS pa.function_name
  WHERE pb.present IS NULL
  UNION ALL
  SELECT CASE WHEN pb.matcher IS NULL THEN 'built' ELSE 'added' END, pb.matcher, pb.function_name, pb.ops, pb.file,
         pb.line, pb.upat
  FROM pb LEFT JOIN pa ON pa.matcher IS pb.matcher AND pa.upat IS pb.upat AND pa.function_name IS pb.function_name
  WHERE pa.present IS NULL
  ORDER BY 1, 2, 5, 6
)
UNION ALL
SELECT 'no stored commit matches ' || CASE WHEN NOT EXISTS (SELECT 1 FROM ca) THEN 'a=' || quote(:a)
                                           ELSE 'b=' || quote(:b) END, NULL, NULL, NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM ca) OR NOT EXISTS (SELECT 1 FROM cb)
