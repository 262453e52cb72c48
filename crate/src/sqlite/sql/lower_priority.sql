-- ?1 queue, ?2 priority. The next priority below ?2 of an open job of queue ?1: one probe.
SELECT priority FROM leasefence_order INDEXED BY leasefence_next
WHERE open = 1 AND queue = ?1 AND priority < ?2
ORDER BY priority DESC LIMIT 1
