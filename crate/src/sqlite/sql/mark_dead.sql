-- ?1 job, ?2 fence, ?3 at.
INSERT OR REPLACE INTO leasefence_dead(job, fence, at) VALUES (?1, ?2, ?3)
