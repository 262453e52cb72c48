-- ?1 job, ?2 until: extended by job id, whoever asks (goqite's Extend).
UPDATE lease_only_jobs SET until = ?2 WHERE id = ?1 AND done = 0
