-- ?1 now. Every job in exactly one state: queued (claimable now), scheduled (no owner, not before
-- `until`), leased (a live lease), done, dead (done and marked).
SELECT coalesce(sum(done = 0 AND until <= ?1), 0),
       coalesce(sum(done = 0 AND until > ?1 AND owner IS NULL), 0),
       coalesce(sum(done = 0 AND until > ?1 AND owner IS NOT NULL), 0),
       coalesce(sum(done = 1 AND id NOT IN (SELECT job FROM leasefence_dead)), 0),
       coalesce(sum(done = 1 AND id IN (SELECT job FROM leasefence_dead)), 0)
FROM jobs
