-- INDEXED BY: a job's failures through its index, whatever the planner statistics say.
SELECT fence, at, error FROM leasefence_failures INDEXED BY leasefence_failures_of_job
WHERE job = ?1 ORDER BY rowid
