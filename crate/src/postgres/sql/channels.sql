-- $1 queues, '' standing for every queue. The LISTEN channel of each (docs/decisions/waking.md):
-- 'leasefence_' and the md5 of the current schema's length, ':', the schema and the queue name,
-- so names of any length and bytes give a valid identifier of 43 characters, each schema its
-- own channels, and '' (no queue is empty) the channel of every queue. Enqueue, enqueue_many
-- and the statements that free jobs (release, fail_retry, revive) notify with this same
-- expression (enqueue.sql, enqueue_many.sql, notify_freed.sql).
SELECT 'leasefence_' || md5(length(current_schema())::text || ':' || current_schema() || q)
FROM unnest($1::text[]) AS q
