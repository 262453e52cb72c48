-- ?1 job, ?2 fence, ?3 at, ?4 error.
INSERT INTO leasefence_failures(job, fence, at, error) VALUES (?1, ?2, ?3, ?4)
