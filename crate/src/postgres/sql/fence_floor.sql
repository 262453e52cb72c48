-- The fence floor (section 13): 0 for a schema that never pruned.
SELECT coalesce((SELECT floor FROM leasefence_floor WHERE id = 1), 0)
