-- ?1 job, ?2 owner, ?3 until, ?4 now. `fence < i64::MAX`: SQLite would silently turn the
-- overflowing `fence + 1` into a REAL.
UPDATE jobs SET owner = ?2, until = ?3, fence = fence + 1
WHERE id = ?1 AND done = 0 AND until <= ?4 AND fence < 9223372036854775807
RETURNING fence
