-- The dead jobs of each queue (done and marked), from the marks.
SELECT o.queue, count(*)
FROM leasefence_dead d JOIN jobs j ON j.id = d.job JOIN leasefence_order o ON o.id = d.job
WHERE j.done = 1
GROUP BY o.queue
