"""Fake-NVML device profiles (YAML data files; see docs/gpu.md and nfd.nvml_fake)."""
