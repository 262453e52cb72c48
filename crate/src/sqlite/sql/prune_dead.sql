-- ?1 a job being pruned: its rows of leasefence_dead. One id per statement: the wasm builds'
-- SQLite has no json_each to take a list.
DELETE FROM leasefence_dead WHERE job = ?1
