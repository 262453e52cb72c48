-- ?1 a job being pruned: its rows of leasefence_payloads. One id per statement: the wasm builds'
-- SQLite has no json_each to take a list.
DELETE FROM leasefence_payloads WHERE job = ?1
