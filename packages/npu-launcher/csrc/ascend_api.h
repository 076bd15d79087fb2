// The CANN runtime functions the ascend driver resolves with dlsym. They are the calls
// triton-ascend 3.2's own launcher makes (npu_utils.cpp registerKernel: binary register,
// function register; the generated launcher: rtGetC2cCtrlAddr, rtKernelLaunch), plus two ACL
// calls torch_npu itself makes (aclrtSetDevice instead of rtSetDevice, aclrtGetSocName for
// the target check), so every symbol is one libtorch_npu.so imports. Declared here, no CANN
// header at build time; tests/test_ascend_fidelity.py checks each prototype against the
// torch_npu 2.13.0 wheel's headers and triton-ascend 3.2.0's call sites.
#pragma once

#include <cstdint>

namespace npl {
namespace rt {

typedef int rtError_t;   // enum tagRtError in CANN, int-sized
typedef int aclError;
typedef void *rtStream_t;
typedef struct tagRtSmDesc rtSmDesc_t;
typedef struct tagRtDevBinary {
  uint32_t magic;    // RT_DEV_BINARY_MAGIC_*
  uint32_t version;
  const void *data;
  uint64_t length;
} rtDevBinary_t;

constexpr rtError_t RT_ERROR_NONE = 0;
constexpr uint32_t RT_DEV_BINARY_MAGIC_ELF = 0x43554245;        // aicore ("mix") kernels
constexpr uint32_t RT_DEV_BINARY_MAGIC_ELF_AIVEC = 0x41415246;  // vector-core kernels

#define NPL_ASCEND_FUNCTIONS(X)                                                            \
  X(aclError, aclrtSetDevice, (int32_t deviceId))                                          \
  X(const char *, aclrtGetSocName, ())                                                     \
  X(rtError_t, rtDevBinaryRegister, (const rtDevBinary_t *bin, void **handle))             \
  X(rtError_t, rtFunctionRegister,                                                         \
    (void *binHandle, const void *stubFunc, const char *stubName, const void *devFunc,     \
     uint32_t funcMode))                                                                   \
  X(rtError_t, rtGetC2cCtrlAddr, (uint64_t *addr, uint32_t *len))                          \
  X(rtError_t, rtKernelLaunch,                                                             \
    (const void *stubFunc, uint32_t blockDim, void *args, uint32_t argsSize,               \
     rtSmDesc_t *smDesc, rtStream_t stream))

#define NPL_DECLARE_FN(ret, name, params) typedef ret(*name##_t) params;
NPL_ASCEND_FUNCTIONS(NPL_DECLARE_FN)
#undef NPL_DECLARE_FN

struct Api {
#define NPL_MEMBER(ret, name, params) name##_t name = nullptr;
  NPL_ASCEND_FUNCTIONS(NPL_MEMBER)
#undef NPL_MEMBER
};

}  // namespace rt
}  // namespace npl
