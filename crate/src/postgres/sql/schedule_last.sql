-- The latest slot enqueued; never moves back (a caller with an older `now` changes nothing).
UPDATE leasefence_schedules SET last = $2 WHERE name = $1 AND (last IS NULL OR last < $2)
