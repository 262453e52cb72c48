-- ?1 a job being pruned: its rows of leasefence_failures. One id per statement: the wasm builds'
-- SQLite has no json_each to take a list.
DELETE FROM leasefence_failures WHERE job = ?1
