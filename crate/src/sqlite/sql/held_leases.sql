-- ?1 now, ?2 how many. The live leases (an owner, not done, until after now), soonest to end
-- first, along leasefence_claimable (until, for the open jobs).
SELECT j.owner, j.id, j.fence, j.until FROM jobs j
WHERE j.done = 0 AND j.until > ?1 AND j.owner IS NOT NULL AND j.fence < 9223372036854775807
ORDER BY j.until, j.rowid LIMIT ?2
