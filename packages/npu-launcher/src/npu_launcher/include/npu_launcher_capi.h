/* npu-launcher's C ABI: what generated C++ (npu-lowering's cpp_wrapper for npu) calls to
 * launch a kernel through npu-launcher's launch objects. One table of function pointers per
 * process, exported as the capsule "npu_launcher.capi._C_API":
 *
 *     const NplCApi *api = (const NplCApi *)PyCapsule_Import("npu_launcher.capi._C_API", 0);
 *
 * Every function takes the GIL itself (PyGILState_Ensure), so it may be called with or
 * without it. Errors: a NULL handle / non-zero return, with a message in err (err_size
 * bytes, NUL-terminated). No torch header is needed to use it.
 */
#ifndef NPU_LAUNCHER_CAPI_H
#define NPU_LAUNCHER_CAPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NPL_CAPI_VERSION 1
#define NPL_CAPI_CAPSULE "npu_launcher.capi._C_API"

typedef struct NplCApi {
  int version; /* NPL_CAPI_VERSION */
  /* Load the descriptor file at path (npu-launcher's wire format, NPLKD1) and bind it on
   * device (-1: any / the driver's default): the launch object, or NULL. */
  void *(*load)(const char *path, int device, char *err, size_t err_size);
  /* The number of arguments the bound binary takes (specialized ones excluded). */
  int (*num_args)(void *kernel);
  /* Launch on grid (gx, gy, gz) on stream (the driver's raw stream handle; NULL: default).
   * args[i] points at the kernel's i-th binary argument: for a pointer parameter an
   * AtenTensorHandle (a NULL handle passes a null pointer), for a scalar its value in the
   * parameter's Triton type (i1: bool, i8..i64 / u8..u64: the C integer of that width,
   * fp32: float, fp64: double). Arguments are validated as a Python call's are (device,
   * dtype, alignment, integer range). 0 on success. */
  int (*launch)(void *kernel, uint32_t gx, uint32_t gy, uint32_t gz, void *stream, void **args,
                int nargs, char *err, size_t err_size);
  /* Drop the handle load returned. */
  void (*release)(void *kernel);
} NplCApi;

/* The same table without Python, for cuda and Ascend kernels (a process serving an
 * AOTInductor package with no interpreter): exported by libnpu_launcher_direct.so, installed
 * next to npu_launcher's extension (npu_launcher.capi.direct_library()). It needs no Python
 * and links no torch: tensor arguments are read through libtorch's AOTI shim found in the
 * process. Descriptors of npu-sim (Triton's interpreter) are refused by its load. */
#define NPL_DIRECT_LIBRARY "libnpu_launcher_direct.so"
#define NPL_DIRECT_SYMBOL "npl_direct_api"
typedef const NplCApi *(*NplDirectApiFn)(void);

#ifdef __cplusplus
}
#endif

#endif /* NPU_LAUNCHER_CAPI_H */
