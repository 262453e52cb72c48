-- The wake-up of a statement that makes jobs claimable again (release, a failure's retry,
-- revive): put in place of its `-- notify freed` line, after a CTE `freed` of the jobs' ids
-- and queues.
-- Notifies the channel of each job's queue and of every queue (channels.sql), delivered at
-- commit: idle workers claim the job, or look again when its retry time comes.
woken AS (
    SELECT pg_notify('leasefence_'
               || md5(length(current_schema())::text || ':' || current_schema() || c.q), '')
    FROM (SELECT queue FROM freed UNION ALL SELECT '' FROM freed) AS c(q))
