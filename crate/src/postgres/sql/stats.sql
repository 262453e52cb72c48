-- $1 now. Every job in exactly one state: queued (claimable now), scheduled (no owner, not before
-- `until`), leased (a live lease), done, dead (done and marked).
SELECT count(*) FILTER (WHERE done = 0 AND until <= $1),
       count(*) FILTER (WHERE done = 0 AND until > $1 AND owner IS NULL),
       count(*) FILTER (WHERE done = 0 AND until > $1 AND owner IS NOT NULL),
       count(*) FILTER (WHERE done = 1 AND NOT EXISTS (
           SELECT 1 FROM leasefence_dead d WHERE d.job = jobs.id)),
       count(*) FILTER (WHERE done = 1 AND EXISTS (
           SELECT 1 FROM leasefence_dead d WHERE d.job = jobs.id))
FROM jobs
