-- $1 job, $2 now. Dead jobs only (done and marked): claimable from now, the fence kept, the mark
-- removed in the same statement; one row when revived. A second reviser waits for the first's
-- row lock, then finds done = 0 and changes nothing. A job revived notifies its queue's channel
-- and every queue's (channels.sql), at commit.
WITH revived AS (
    UPDATE jobs SET done = 0, owner = NULL, until = $2
    WHERE id = $1 AND done = 1 AND EXISTS (SELECT 1 FROM leasefence_dead WHERE job = $1)
    RETURNING id),
woken AS (
    SELECT pg_notify('leasefence_'
               || md5(length(current_schema())::text || ':' || current_schema() || c.q), '')
    FROM (SELECT o.queue FROM leasefence_order o JOIN revived r ON r.id = o.id
          UNION ALL SELECT '' FROM revived) AS c(q))
DELETE FROM leasefence_dead WHERE job IN (SELECT id FROM revived)
AND (SELECT count(*) FROM woken) >= 0
