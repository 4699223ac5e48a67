"""Infrastructure shared by the four processes (HTTP probes/metrics, Go-style flags, logging)."""
