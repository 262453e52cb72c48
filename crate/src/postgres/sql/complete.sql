-- $1 job, $2 owner, $3 fence, $4 now, $5 result. One row when the lease matched. The job's
-- finish time (prune, section 13) is this `now`, written with the result.
UPDATE jobs SET result = $5, done = 1, finished = $4
WHERE id = $1 AND owner = $2 AND fence = $3 AND done = 0 AND until > $4
RETURNING id
