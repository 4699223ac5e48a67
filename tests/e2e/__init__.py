"""End-to-end tests against a real kube-apiserver built from Go modules (see harness.py)."""
