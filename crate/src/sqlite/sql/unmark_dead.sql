DELETE FROM leasefence_dead WHERE job = ?1
