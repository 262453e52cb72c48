-- ?1 job. Dead: marked, and still done (a mark whose row was changed outside the contract counts
-- for nothing).
SELECT EXISTS (SELECT 1 FROM leasefence_dead d JOIN jobs j ON j.id = d.job
               WHERE d.job = ?1 AND j.done = 1)
