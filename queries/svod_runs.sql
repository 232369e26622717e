-- title: Stored Svod runs
-- description: Every ingested Svod path (a log, an extract-ir.sh file, a dump directory), newest first: its case,
--   Svod commit, what it held and how many problems reading it found.
-- parameters: none
SELECT r.id AS svod_run, c.name AS "case", r.svod_commit, r.kind, r.source_path, r.ingested_at, r.file_count,
       r.kernel_count, r.stage_count, r.event_count, r.problem_count,
       (SELECT group_concat(name, ', ') FROM (SELECT k.name FROM svod_kernels k WHERE k.run_id = r.id
                                              ORDER BY k.kernel_index)) AS kernels
FROM svod_runs r JOIN cases c ON c.id = r.case_id
ORDER BY r.ingested_at DESC, r.id DESC
