// Not a Go program: the mock NVML library (mocknvml.c, plain C) is compiled against go-nvml's
// nvml.h, which tests/support/mocknvml.py takes from this pinned module (`go mod download`).
module nfd.test/mocknvml

go 1.25

require github.com/NVIDIA/go-nvml v0.13.4-1
