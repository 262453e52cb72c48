-- ?1 now, ?2 queue. stats.sql for the jobs of one queue (their rows of leasefence_order).
SELECT coalesce(sum(done = 0 AND until <= ?1), 0),
       coalesce(sum(done = 0 AND until > ?1 AND owner IS NULL), 0),
       coalesce(sum(done = 0 AND until > ?1 AND owner IS NOT NULL), 0),
       coalesce(sum(done = 1 AND id NOT IN (SELECT job FROM leasefence_dead)), 0),
       coalesce(sum(done = 1 AND id IN (SELECT job FROM leasefence_dead)), 0)
FROM jobs WHERE id IN (SELECT job FROM leasefence_order WHERE queue = ?2)
