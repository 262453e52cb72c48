-- ?1 owner, ?2 until, ?3 now. Jobs whose fence is exhausted are skipped here; `claim` on them
-- reports FenceExhausted. INDEXED BY pins the plan to the claimable index: planner statistics
-- (sqlite_stat1, which any connection to the file can write) must not turn this lookup into a
-- scan of the whole table; without the index the statement fails rather than scans.
UPDATE jobs SET owner = ?1, until = ?2, fence = fence + 1
WHERE rowid = (SELECT rowid FROM jobs INDEXED BY leasefence_claimable
               WHERE done = 0 AND until <= ?3 AND fence < 9223372036854775807
               ORDER BY until, rowid LIMIT 1)
RETURNING id, fence
