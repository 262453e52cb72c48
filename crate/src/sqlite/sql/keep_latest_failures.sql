-- ?1 job, ?2 how many to keep: drops the job's older failure records past the latest ?2.
DELETE FROM leasefence_failures
WHERE job = ?1 AND rowid <= (SELECT rowid FROM leasefence_failures INDEXED BY leasefence_failures_of_job
                             WHERE job = ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2)
