-- title: Most-matched patterns for a case at a commit
-- description: The PatternMatcher rules that fired while a case was scheduled and lowered at one commit, most
--   matches first, with how often they were tried. An unknown commit gives one row saying so.
-- parameters: commit (commit: sha, sha prefix or version), case_name (case name, e.g. matmul)
WITH c AS (
  SELECT commit_id AS id FROM v_commits
  WHERE :commit <> '' AND (sha = :commit OR sha LIKE :commit || '%' OR version = :commit)
  ORDER BY sha = :commit DESC, history_rank DESC LIMIT 1
)
SELECT * FROM (
  SELECT pm.matcher, pm.function_name, pm.matches, pm.tries,
         round(100.0 * pm.matches / nullif(pm.tries, 0), 1) AS hit_percent, pm.ops, pm.file, pm.line, r.backend,
         pm.upat
  FROM v_pattern_matches pm JOIN runs r ON r.id = pm.run_id
  WHERE r.commit_id = (SELECT id FROM c) AND pm."case" = :case_name
  ORDER BY pm.matches DESC, pm.tries DESC, pm.matcher, pm.line
)
UNION ALL
SELECT 'no stored commit matches ' || quote(:commit), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM c)
