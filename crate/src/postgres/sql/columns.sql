-- The columns of `jobs` in the current schema: name, type, not null, default, primary key.
SELECT a.attname::text, format_type(a.atttypid, a.atttypmod),
a.attnotnull, pg_get_expr(d.adbin, d.adrelid),
EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary
AND i.indnatts = 1 AND i.indkey[0] = a.attnum)
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE n.nspname = current_schema() AND c.relname = 'jobs'
AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
