"""The languages users write in rules, each behind a small compile/evaluate surface.

``cel`` (matchCEL expressions), ``gotemplate`` (Go text/template with Sprig, for labelsTemplate
and varsTemplate) and ``goregex`` (Go regexps on RE2, for every regexp anywhere). Code outside a
language package imports only from the package itself, never from its modules.
"""
