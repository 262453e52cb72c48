-- ?1 a job being pruned, deleted after its side rows (its leasefence_order row goes with it by
-- trigger).
DELETE FROM jobs WHERE id = ?1
