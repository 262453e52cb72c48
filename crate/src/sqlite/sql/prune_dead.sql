-- ?1 a JSON array of the job ids being pruned: their rows of leasefence_dead.
DELETE FROM leasefence_dead WHERE job IN (SELECT value FROM json_each(?1))
