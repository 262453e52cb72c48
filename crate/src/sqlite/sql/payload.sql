SELECT payload FROM leasefence_payloads WHERE job = ?1
