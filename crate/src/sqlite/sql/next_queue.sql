-- ?1 queue. The next queue name after ?1 with an open job: one probe of leasefence_next.
SELECT queue FROM leasefence_order INDEXED BY leasefence_next WHERE open = 1 AND queue > ?1
ORDER BY queue LIMIT 1
