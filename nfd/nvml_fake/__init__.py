"""A fake NVML for tests and demos: pynvml's function names, driven by a device profile.

Profiles are YAML files in ``nfd/nvml_fake/device_profiles/`` (or any path); see docs/gpu.md for
the format. Errors are real ``pynvml.NVMLError`` instances, so code under test cannot tell the
fake from the library. Faults are injected per call and optionally per GPU::

    fake = FakeNvml(load_profile("h100x8"))
    fake.inject("nvmlDeviceGetName", "GPU_IS_LOST", device=3)
    fake.inject("nvmlInit", "DRIVER_NOT_LOADED", times=1)

``NFD_NVML_PROFILE=h100x8`` makes the nvml source use this fake (``NFD_NVML_FAULTS`` takes
``call[@gpu]=ERROR[*times]`` items separated by commas).
"""

from nfd.nvml_fake.fakenvml import FakeHost, FakeNvml, Fault
from nfd.nvml_fake.profiles import PROFILE_DIR, available_profiles, load_profile

__all__ = ["PROFILE_DIR", "FakeHost", "FakeNvml", "Fault", "available_profiles", "load_profile"]
