-- Stores a schedule (docs/contract.md section 11), replacing one of the same name but keeping its
-- `last`, the latest slot enqueued.
INSERT INTO leasefence_schedules(name, cron, tz, queue, priority, payload, missed)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (name) DO UPDATE SET cron = excluded.cron, tz = excluded.tz, queue = excluded.queue,
    priority = excluded.priority, payload = excluded.payload, missed = excluded.missed
