SELECT id, owner, until, result, done, error, dead FROM lease_only_jobs WHERE id = ?1
