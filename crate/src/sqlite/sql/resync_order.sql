-- ?1 job. Brings one job's row of leasefence_order back in line with `jobs` (a copy the triggers
-- did not keep, e.g. written while they were dropped); a row whose job is gone is closed.
UPDATE leasefence_order
SET until = coalesce((SELECT until FROM jobs WHERE id = ?1), until),
    open = coalesce((SELECT done = 0 AND fence < 9223372036854775807 FROM jobs WHERE id = ?1), 0)
WHERE job = ?1
