"""The ``nvml`` source: NVIDIA GPU features via NVML and gpu-feature-discovery-compatible labels.

Importing this package is cheap: pynvml (or the fake) is imported on the first discovery.
"""

from nfd.sources.nvml.source import SOURCE, NvmlSource

__all__ = ["SOURCE", "NvmlSource"]
