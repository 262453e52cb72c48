-- ?1 job, ?2 queue, ?3 priority. Right after this transaction inserted the job (whose row the
-- insert trigger made in queue 'default' with priority 0).
UPDATE leasefence_order SET queue = ?2, priority = ?3 WHERE job = ?1
