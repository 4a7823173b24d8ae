"""Background jobs and periodic work: the Job row and its lifecycle (claim,
heartbeat, lease, sweep), sending tasks by name, and periodic sends."""
