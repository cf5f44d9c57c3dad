/* The runtime API half of the emulation: see cuda_runtime.h. */
#include "cuda_runtime.h"
