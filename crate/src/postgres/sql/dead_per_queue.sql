-- The dead jobs of each queue (done and marked), from the marks.
SELECT j.queue, count(*)
FROM leasefence_dead d JOIN jobs j ON j.id = d.job
WHERE j.done = 1
GROUP BY j.queue
