-- ?1 queue, ?2 priority, ?3 now. The first claimable job of one (queue, priority): earliest
-- until, then oldest (seq, which SQLite appends to the index). One probe of leasefence_next;
-- INDEXED BY pins the plan whatever the planner statistics say.
SELECT until, seq, job FROM leasefence_order INDEXED BY leasefence_next
WHERE open = 1 AND queue = ?1 AND priority = ?2 AND until <= ?3
ORDER BY until, seq LIMIT 1
