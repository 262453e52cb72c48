-- ?1 job, ?2 owner, ?3 fence, ?4 now. The checks of complete; done with no result, so no program
-- that knows only `jobs` claims it again. The dead mark goes beside it in the same transaction.
UPDATE jobs SET done = 1
WHERE id = ?1 AND owner = ?2 AND fence = ?3 AND done = 0 AND until > ?4
