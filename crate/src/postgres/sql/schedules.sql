SELECT name, cron, tz, queue, priority, payload, missed, last FROM leasefence_schedules
ORDER BY name COLLATE "C"
