"""Test suites: unit/ (pure Python) and e2e/ (real kube-apiserver)."""
