"""Kubernetes API access: one module per family of verbs.

client (transport, auth, rate limit), resources (paths), fetching (get, list), creating,
updating (replace), deleting, patching (json/merge/strategic/apply), watching (watch, Informer),
lease (leader election), events.
"""
