INSERT OR IGNORE INTO lease_only_jobs(id) VALUES (?1)
