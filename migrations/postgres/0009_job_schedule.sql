-- When a job that has never completed is first due (same change as SQLite's
-- 0009): the lifecycle timer records it the first time it finds the job
-- never run, one interval (`cleanup.interval_days`) later, so a weekly job's
-- first run is a week after the deployment first served, not at its first
-- start beside the first searches. `last_completed_at` decides once a run
-- has completed.
ALTER TABLE job_leases ADD COLUMN first_due_at BIGINT;
