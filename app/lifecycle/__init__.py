"""A server process's life beside the requests: start-up work while it answers, readiness,
and following other processes' writes. Above the services it drives, beside app/serving."""
