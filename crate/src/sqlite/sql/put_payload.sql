-- ?1 job, ?2 payload. Only right after this transaction inserted the job; REPLACE drops a
-- payload left by a row someone deleted behind the store's back.
INSERT OR REPLACE INTO leasefence_payloads(job, payload) VALUES (?1, ?2)
