// The normal kernel (engine/model/normal_kernel.h) built for AVX2 + FMA: four doubles a vector.
// This file is compiled with -mavx2 -mfma and without the engine's precompiled header. It holds
// nothing but the kernel (any function here may use AVX instructions), includes nothing with
// inline functions of external linkage, and is called only after normal_kernel.cc has checked
// the CPU.
#define SHARDBENCH_NORMAL_ISA avx2
#include "engine/model/normal_kernel_body.h"
