-- The smallest queue name with an open job: one probe of leasefence_next.
SELECT queue FROM leasefence_order INDEXED BY leasefence_next WHERE open = 1
ORDER BY queue LIMIT 1
