-- ?1 owner, ?2 host, ?3 pid, ?4 started, ?5 last seen (now), ?6 until, ?7 stopped or NULL,
-- ?8..?14 the counters. A beat older than the row's last (a retry arriving late) changes nothing.
INSERT INTO leasefence_workers(owner, host, pid, started, last_seen, until, stopped, claimed,
    completed, failed, dead, leases_lost, stale_writes_refused, renewals)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
ON CONFLICT(owner) DO UPDATE SET host = excluded.host, pid = excluded.pid,
    started = excluded.started, last_seen = excluded.last_seen, until = excluded.until,
    stopped = excluded.stopped, claimed = excluded.claimed, completed = excluded.completed,
    failed = excluded.failed, dead = excluded.dead, leases_lost = excluded.leases_lost,
    stale_writes_refused = excluded.stale_writes_refused, renewals = excluded.renewals
WHERE excluded.last_seen >= leasefence_workers.last_seen
