-- ?1 job, ?2 run_at (0 when not delayed). OR IGNORE: re-enqueueing never resets a live lease.
INSERT OR IGNORE INTO jobs(id, until) VALUES (?1, ?2)
