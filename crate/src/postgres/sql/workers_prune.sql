-- $1 the time before which a worker that went is forgotten (now - WORKER_PRUNE_AFTER).
DELETE FROM leasefence_workers WHERE coalesce(stopped, until) < $1
