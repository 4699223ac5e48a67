"""Fake-NVML device profiles (YAML data files; see docs/gpu.md and nfd.nvml_fake), kept with
the fake so that nothing of it lies under the real source (nfd/sources/nvml)."""
