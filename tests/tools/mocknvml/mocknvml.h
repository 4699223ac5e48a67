/* What the mock's source files share (each *.c here is compiled into the one library). */
#ifndef NFD_MOCKNVML_H
#define NFD_MOCKNVML_H

#include "nvml.h"

/* mocknvml.c: the prologue of a call on a full GPU (initialised, a known handle of a full GPU,
 * no injected error for CALL on it); NVML_SUCCESS and the GPU's index, or the error to return */
nvmlReturn_t mock_full_gpu(const char *call, nvmlDevice_t handle, int *index);

/* health.c: a "health" record of the data file for GPU INDEX (0, or -1 if malformed), and the
 * reset before the data file is read again */
int mock_health_record(int index, char **fields, int n);
void mock_health_reset(void);

#endif
