-- title: Problems reading Svod output
-- description: Problems found while reading stored Svod runs (a malformed JSON line, an unterminated dump, a tree
--   that does not parse, a log mixing backends), with the file and line; the text of every file is kept whole.
-- parameters: svod_run (optional: one Svod run id; empty for all)
SELECT p.run_id AS svod_run, c.name AS "case", f.path AS file, p.line_no, p.message, p.text
FROM svod_problems p JOIN svod_runs r ON r.id = p.run_id JOIN cases c ON c.id = r.case_id
LEFT JOIN svod_files f ON f.run_id = p.run_id AND f.position = p.file_position
WHERE :svod_run = '' OR p.run_id = CAST(:svod_run AS INTEGER)
ORDER BY p.run_id DESC, p.file_position, p.line_no
