-- ?1 queue. The highest priority of an open job of queue ?1: one probe of leasefence_next.
SELECT priority FROM leasefence_order INDEXED BY leasefence_next WHERE open = 1 AND queue = ?1
ORDER BY priority DESC LIMIT 1
