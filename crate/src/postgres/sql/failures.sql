SELECT fence, at, error FROM leasefence_failures WHERE job = $1 ORDER BY seq
