-- ?1 job. Whether the job has a dead mark: one lookup by the mark's key. inspect counts it only
-- while the row it has just read is done (a mark whose row was changed outside the contract
-- counts for nothing), so the row is not read again here.
SELECT EXISTS (SELECT 1 FROM leasefence_dead WHERE job = ?1)
