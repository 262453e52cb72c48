SELECT COUNT(*) FROM pragma_table_info('lease_only_jobs') WHERE name = 'dead'
