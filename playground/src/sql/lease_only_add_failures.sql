-- A table made before fail existed gets its two columns (the last error, the dead mark).
ALTER TABLE lease_only_jobs ADD COLUMN error TEXT;
ALTER TABLE lease_only_jobs ADD COLUMN dead INTEGER NOT NULL DEFAULT 0;
