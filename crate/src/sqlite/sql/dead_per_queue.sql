-- The dead jobs of each queue (done and marked), from the marks.
SELECT o.queue, count(*)
FROM leasefence_dead d CROSS JOIN jobs j CROSS JOIN leasefence_order o
WHERE j.id = d.job AND j.done = 1 AND o.job = d.job
GROUP BY o.queue
