"""Test doubles shared by unit and e2e tests (import as ``tests.support...``)."""
