-- ?1 job, ?2 owner, ?3 until, ?4 now: a job whose lease has ended goes to the new owner.
UPDATE lease_only_jobs SET owner = ?2, until = ?3 WHERE id = ?1 AND done = 0 AND until <= ?4
