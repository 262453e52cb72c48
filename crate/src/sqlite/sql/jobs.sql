SELECT id, owner, until, fence, result, done FROM jobs ORDER BY rowid
