"""The languages users write in rules, each behind a small compile/evaluate surface.

``cel`` (matchCEL expressions), ``gotemplate`` (Go text/template with Sprig, for labelsTemplate
and varsTemplate) and ``goregex`` (Go regexps on RE2, for every regexp anywhere). Code outside a
language package imports only from the package itself, never from its modules.

What the languages share with each other and with the rule engine: ``gostd`` (Go's strconv,
net/netip, net/url and time durations, one model with Go's error texts; each module is its API)
and ``semver`` (the lenient version reading of ``type: version``). Nothing here imports the rest
of nfd, and no module of nfd/lang imports another in a cycle (tests/unit/lang/test_layout.py).
"""
