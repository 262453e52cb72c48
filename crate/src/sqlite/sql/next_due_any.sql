-- The earliest `until` of an open job (not done, fence not exhausted), every queue: one probe of
-- the partial index leasefence_claimable (jobs(until) WHERE done = 0). What an idle worker of
-- every queue sleeps until (docs/contract.md section 11, waking).
SELECT until FROM jobs INDEXED BY leasefence_claimable
WHERE done = 0 AND fence < 9223372036854775807
ORDER BY until LIMIT 1
