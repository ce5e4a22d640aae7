-- When a job that has never completed is first due. The lifecycle timer
-- records it the first time it finds the job never run: one interval
-- (`cleanup.interval_days`) later, as a weekly job's first run is a week
-- after the deployment first served, not at its first start (where it would
-- compete with the first searches, at 1M memories for 15-20 s). NULL once
-- unrecorded; `last_completed_at` decides once a run has completed.
ALTER TABLE job_leases ADD COLUMN first_due_at INTEGER;
