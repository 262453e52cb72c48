-- $1 now, $2 how many. The live leases (an owner, open, until after now), soonest to end first,
-- along leasefence_next (until, seq) WHERE done = 0.
SELECT owner, id, fence, until
FROM jobs
WHERE done = 0 AND until > $1 AND owner IS NOT NULL
ORDER BY until, seq
LIMIT $2
