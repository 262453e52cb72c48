-- ?1 job, ?2 owner, ?3 until, ?4 now. Claims the job leasefence_order picked; the conditions of
-- claim are repeated, so a stale copy in leasefence_order can never grant a wrong lease.
UPDATE jobs SET owner = ?2, until = ?3, fence = fence + 1
WHERE id = ?1 AND done = 0 AND until <= ?4 AND fence < 9223372036854775807
RETURNING id, fence
