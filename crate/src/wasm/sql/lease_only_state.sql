SELECT id, owner, until, result, done FROM lease_only_jobs WHERE id = ?1
