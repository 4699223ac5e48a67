"""nfd: Kubernetes Node Feature Discovery, in Python."""

__version__ = "0.1.0"
