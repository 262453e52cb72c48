-- The fence floor: 0 for a store that never pruned.
SELECT coalesce((SELECT floor FROM leasefence_floor WHERE id = 1), 0)
