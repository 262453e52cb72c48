-- ?1 job, ?2 owner, ?3 fence, ?4 now, ?5 retry_at. The checks of complete; the fence is kept, and
-- with no owner and until = retry_at nobody can claim before retry_at.
UPDATE jobs SET owner = NULL, until = ?5
WHERE id = ?1 AND owner = ?2 AND fence = ?3 AND done = 0 AND until > ?4
