-- $1 job. What inspect adds to the row: the dead mark (only while the row is done) and the
-- payload; the failures are read by failures.sql in the same snapshot.
SELECT EXISTS (SELECT 1 FROM leasefence_dead d JOIN jobs j ON j.id = d.job
               WHERE d.job = $1 AND j.done = 1),
       (SELECT payload FROM leasefence_payloads WHERE job = $1)
