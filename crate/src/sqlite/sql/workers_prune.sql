-- ?1 the time before which a worker that went is forgotten (now - WORKER_PRUNE_AFTER). The
-- table holds one row per worker of the last hour: a scan of it is cheap.
DELETE FROM leasefence_workers WHERE coalesce(stopped, until) < ?1
