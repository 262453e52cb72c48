-- $1 now, $2 how many. The live leases (an owner, open, until after now), soonest to end first,
-- along leasefence_next (until, seq) WHERE open.
SELECT j.owner, j.id, j.fence, j.until
FROM leasefence_order o JOIN jobs j ON j.id = o.id
WHERE o.open AND o.until > $1 AND j.owner IS NOT NULL AND j.until > $1 AND j.done = 0
ORDER BY o.until, o.seq
LIMIT $2
