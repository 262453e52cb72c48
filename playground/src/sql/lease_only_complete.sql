-- ?1 job, ?2 result: completed by job id alone, whoever asks and whenever.
UPDATE lease_only_jobs SET result = ?2, done = 1 WHERE id = ?1
