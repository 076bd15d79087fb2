// The CUDA driver API functions the cuda driver resolves with dlsym from libcuda.so.1.
// Declared here (no cuda.h at build time). Each NPL_FN line yields a function-pointer type
// and the prototype text; tests compare that text with Triton's bundled cuda.h.
#pragma once

#include <cstddef>

namespace npl {
namespace cu {

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef int CUfunction_attribute;
typedef int CUdevice_attribute;

// values from the CUDA driver API (checked against cuda.h by tests/test_cuda_abi.py)
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_CONTEXT = 201;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_NUM_REGS = 4;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;

#define NPL_CUDA_FUNCTIONS(X)                                                              \
  X(CUresult, cuInit, (unsigned int Flags))                                                \
  X(CUresult, cuDeviceGet, (CUdevice *device, int ordinal))                                \
  X(CUresult, cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev))    \
  X(CUresult, cuDevicePrimaryCtxRetain, (CUcontext *pctx, CUdevice dev))                   \
  X(CUresult, cuCtxGetCurrent, (CUcontext *pctx))                                          \
  X(CUresult, cuCtxSetCurrent, (CUcontext ctx))                                            \
  X(CUresult, cuModuleLoadData, (CUmodule *module, const void *image))                     \
  X(CUresult, cuModuleUnload, (CUmodule hmod))                                             \
  X(CUresult, cuModuleGetFunction, (CUfunction *hfunc, CUmodule hmod, const char *name))   \
  X(CUresult, cuFuncGetAttribute, (int *pi, CUfunction_attribute attrib, CUfunction hfunc)) \
  X(CUresult, cuFuncSetAttribute, (CUfunction hfunc, CUfunction_attribute attrib, int value)) \
  X(CUresult, cuGetErrorString, (CUresult error, const char **pStr))                       \
  X(CUresult, cuLaunchKernel,                                                              \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,    \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,               \
     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra))

#define NPL_DECLARE_FN(ret, name, params) typedef ret(*name##_t) params;
NPL_CUDA_FUNCTIONS(NPL_DECLARE_FN)
#undef NPL_DECLARE_FN

struct Api {
#define NPL_MEMBER(ret, name, params) name##_t name = nullptr;
  NPL_CUDA_FUNCTIONS(NPL_MEMBER)
#undef NPL_MEMBER
};

}  // namespace cu
}  // namespace npl
