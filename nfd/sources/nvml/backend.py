"""The NVML calls the source makes, as a protocol: the ``pynvml`` module or the fake satisfy it.

Names, arguments and return shapes are pynvml's (``nvidia-ml-py``); errors are
``pynvml.NVMLError`` instances whose ``.value`` is the NVML return code. Nothing here imports
pynvml: the real backend is imported only when the source first runs.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

# ctypes field access, in a module of its own so that the fake NVML (nfd.nvml_fake), which this
# module loads under NFD_NVML_PROFILE, can use it without importing this module back
from nfd.sources.nvml.fields import field_bytes as field_bytes
from nfd.sources.nvml.fields import set_field_bytes as set_field_bytes

# NVML return codes (nvml.h); kept here so pure code needs no pynvml import
UNINITIALIZED = 1
INVALID_ARGUMENT = 2
NOT_SUPPORTED = 3
NO_PERMISSION = 4
NOT_FOUND = 6
DRIVER_NOT_LOADED = 9
LIBRARY_NOT_FOUND = 12
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
UNKNOWN = 999

#: init failures meaning "no usable NVML on this machine" rather than "NVML broke"
ABSENT_CODES = frozenset({LIBRARY_NOT_FOUND, DRIVER_NOT_LOADED, FUNCTION_NOT_FOUND})

PROFILE_ENV = "NFD_NVML_PROFILE"
FAULTS_ENV = "NFD_NVML_FAULTS"


class NvmlBackend(Protocol):
    """The subset of pynvml the collector uses (handles are opaque)."""

    def nvmlInit(self) -> None: ...
    def nvmlShutdown(self) -> None: ...
    def nvmlSystemGetDriverVersion(self) -> str: ...
    def nvmlSystemGetCudaDriverVersion(self) -> int: ...
    def nvmlSystemGetNVMLVersion(self) -> str: ...
    def nvmlDeviceGetCount(self) -> int: ...
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any: ...
    def nvmlDeviceGetName(self, handle: Any) -> str: ...
    def nvmlDeviceGetUUID(self, handle: Any) -> str: ...
    def nvmlDeviceGetBrand(self, handle: Any) -> int: ...
    def nvmlDeviceGetArchitecture(self, handle: Any) -> int: ...
    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any: ...
    def nvmlDeviceGetCudaComputeCapability(self, handle: Any) -> tuple[int, int]: ...
    def nvmlDeviceGetPciInfo(self, handle: Any) -> Any: ...
    def nvmlDeviceGetNumaNodeId(self, handle: Any) -> int: ...
    def nvmlDeviceGetMigMode(self, handle: Any) -> list[int]: ...
    def nvmlDeviceGetMaxMigDeviceCount(self, handle: Any) -> int: ...
    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: Any, index: int) -> Any: ...
    def nvmlDeviceGetAttributes(self, handle: Any) -> Any: ...
    def nvmlDeviceGetGpuInstanceId(self, handle: Any) -> int: ...
    def nvmlDeviceGetComputeInstanceId(self, handle: Any) -> int: ...
    def nvmlDeviceGetGpuInstanceById(self, handle: Any, gi_id: int) -> Any: ...
    def nvmlGpuInstanceGetInfo(self, gi: Any) -> Any: ...
    def nvmlGpuInstanceGetComputeInstanceById(self, gi: Any, ci_id: int) -> Any: ...
    def nvmlComputeInstanceGetInfo(self, ci: Any) -> Any: ...
    def nvmlDeviceGetGpuInstanceProfileInfo(self, handle: Any, profile: int, version: int = 2) -> Any: ...
    def nvmlGpuInstanceGetComputeInstanceProfileInfo(
        self, gi: Any, profile: int, eng_profile: int, version: int = 2
    ) -> Any: ...
    def nvmlDeviceGetGpuFabricInfoV(self, handle: Any, info: Any) -> int: ...
    def nvmlDeviceGetGpuFabricInfo(self, handle: Any, info: Any) -> int: ...


def nvml_code(exc: BaseException) -> int | None:
    """The NVML return code of a pynvml error, None for any other exception."""
    if not any(c.__name__ == "NVMLError" for c in type(exc).__mro__):
        return None
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else UNKNOWN


def describe(exc: BaseException) -> str:
    code = nvml_code(exc)
    text = str(exc) or type(exc).__name__
    return f"{text} (NVML code {code})" if code is not None else text


def load_backend(env: dict[str, str] | None = None) -> tuple[Any, Any | None]:
    """(backend, fake host facts or None): the fake when ``NFD_NVML_PROFILE`` is set, else pynvml.

    ImportError of pynvml propagates; the caller treats it like a missing library.
    """
    env = dict(os.environ) if env is None else env
    profile = env.get(PROFILE_ENV, "").strip()
    if profile:
        # deferred: the fake is 48.6 ms of a one-shot worker's start-up, and the one package-level
        # import cycle (nvml_fake is built on this source's snapshot types; pyproject.toml)
        from nfd.nvml_fake import FakeNvml, load_profile

        fake = FakeNvml(load_profile(profile))
        faults = env.get(FAULTS_ENV, "").strip()
        if faults:
            fake.inject_spec(faults)
        return fake, fake.host
    import pynvml  # deferred: 12.4 ms of a one-shot worker's start-up; only where a driver is

    return pynvml, None
