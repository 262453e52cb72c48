SELECT owner, until, fence, done FROM jobs WHERE id = ?1
