-- ?1 job, ?2 now: the finish time prune reads (section 13), the `now` of the complete or fail
-- that finished the job; the update trigger stamped the store's clock a moment before.
UPDATE leasefence_order SET finished = ?2 WHERE job = ?1
