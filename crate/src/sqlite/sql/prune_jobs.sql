-- ?1 a JSON array of the job ids being pruned, deleted last (their leasefence_order rows go with
-- them by trigger).
DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?1))
