-- After candidates.sql ($1 now, $2 queues, $3 = 1). The first claimable job of those queues in
-- the claim order, locked or not: its id and insertion number (what a claimer waits for when
-- every claimable job is locked).
SELECT id, seq FROM candidates ORDER BY priority DESC, until, seq LIMIT 1
