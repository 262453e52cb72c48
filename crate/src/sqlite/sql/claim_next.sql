-- ?1 owner, ?2 until, ?3 now. Jobs whose fence is exhausted are skipped here; `claim` on them
-- reports FenceExhausted.
UPDATE jobs SET owner = ?1, until = ?2, fence = fence + 1
WHERE rowid = (SELECT rowid FROM jobs
               WHERE done = 0 AND until <= ?3 AND fence < 9223372036854775807
               ORDER BY until, rowid LIMIT 1)
RETURNING id, fence
