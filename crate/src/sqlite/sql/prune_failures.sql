-- ?1 a JSON array of the job ids being pruned: their rows of leasefence_failures.
DELETE FROM leasefence_failures WHERE job IN (SELECT value FROM json_each(?1))
