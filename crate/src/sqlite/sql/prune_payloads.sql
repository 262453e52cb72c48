-- ?1 a JSON array of the job ids being pruned: their rows of leasefence_payloads.
DELETE FROM leasefence_payloads WHERE job IN (SELECT value FROM json_each(?1))
