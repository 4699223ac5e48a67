"""The ``dra`` feature source of nfd-master: devices from resource.k8s.io/v1 ResourceSlices.

- ``slices``: one ResourceSlice -> a compact, pre-typed ``DraSlice`` (never raises; problems
  become named warnings);
- ``pools``: the cluster's slices -> each node's devices as DRA defines pools (newest complete
  generation, node selection), as ``dra.device`` instances and as CEL ``devices`` values.

See docs/dra.md.
"""
