-- ?1 queue, ?2 priority. The earliest `until` of an open job of one (queue, priority), due or
-- not: one probe of leasefence_next. An idle worker of named queues takes the smallest over the
-- pairs it visits (next_due.rs).
SELECT until FROM leasefence_order INDEXED BY leasefence_next
WHERE open = 1 AND queue = ?1 AND priority = ?2
ORDER BY until LIMIT 1
