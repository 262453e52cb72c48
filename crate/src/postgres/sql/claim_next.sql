-- $1 owner, $2 until, $3 now. The first claimable job in (until, insertion) order that no other
-- transaction is writing, locked and claimed in one statement. The outer WHERE repeats the
-- conditions: the row is locked by then, so they hold, but a wrong grant must be impossible by
-- construction. The payload comes back with the claim.
UPDATE jobs SET owner = $1, until = $2, fence = fence + 1
WHERE id = (SELECT j.id FROM leasefence_order o JOIN jobs j ON j.id = o.id
WHERE o.open AND o.until <= $3
AND j.done = 0 AND j.until <= $3 AND j.fence < 9223372036854775807
ORDER BY o.until, o.seq LIMIT 1
FOR NO KEY UPDATE OF j SKIP LOCKED)
AND done = 0 AND until <= $3 AND fence < 9223372036854775807
RETURNING id, fence, (SELECT payload FROM leasefence_payloads p WHERE p.job = jobs.id)
