-- ?1 job, ?2 owner, ?3 fence, ?4 now, ?5 result.
UPDATE jobs SET result = ?5, done = 1
WHERE id = ?1 AND owner = ?2 AND fence = ?3 AND done = 0 AND until > ?4
