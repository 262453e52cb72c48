-- ?1 job, ?2 owner, ?3 fence, ?4 now, ?5 until.
UPDATE jobs SET until = ?5
WHERE id = ?1 AND owner = ?2 AND fence = ?3 AND done = 0 AND until > ?4
