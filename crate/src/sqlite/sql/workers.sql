-- ?1 how many. The registry's rows, the latest seen first.
SELECT owner, host, pid, started, last_seen, until, stopped, claimed, completed, failed, dead,
       leases_lost, stale_writes_refused, renewals
FROM leasefence_workers ORDER BY last_seen DESC, owner LIMIT ?1
