DELETE FROM leasefence_schedules WHERE name = ?1;
