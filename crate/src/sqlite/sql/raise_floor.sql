-- ?1 the highest fence of the jobs being pruned: the floor never goes down.
INSERT INTO leasefence_floor(id, floor) VALUES (1, ?1)
ON CONFLICT(id) DO UPDATE SET floor = max(floor, excluded.floor)
