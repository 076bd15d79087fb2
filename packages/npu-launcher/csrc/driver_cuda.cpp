// cuda driver: libcuda.so.1 opened at run time; the cubin from the descriptor is loaded
// with cuModuleLoadData and launched with cuLaunchKernel on the stream the caller passes.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "cuda_api.h"
#include "drivers.h"

namespace npl {
namespace {

cu::Api api;
bool loaded = false;
std::string load_error;

const char *error_string(cu::CUresult r) {
  const char *s = nullptr;
  if (api.cuGetErrorString && api.cuGetErrorString(r, &s) == cu::CUDA_SUCCESS && s) return s;
  return "unknown CUDA error";
}

bool fail(ErrKind kind, const std::string &what, cu::CUresult r) {
  return driver_fail(kind, "npu_launcher: %s failed: %s (CUresult %d)", what.c_str(), error_string(r), (int)r);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> cuda_symbols() {
  return {
#define NPL_SIG(ret, name, params) {#name, #ret " " #name #params},
      NPL_CUDA_FUNCTIONS(NPL_SIG)
#undef NPL_SIG
  };
}

bool cuda_load_api() {
  if (loaded) return true;
  if (!load_error.empty()) {
    driver_fail(E_DRIVER, "%s", load_error.c_str());
    return false;
  }
  const char *env = std::getenv("NPU_LAUNCHER_LIBCUDA");
  const char *lib = env && *env ? env : "libcuda.so.1";
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    load_error = std::string("npu_launcher: cuda driver unavailable: cannot dlopen ") + lib +
                 ": " + dlerror();
    driver_fail(E_DRIVER, "%s", load_error.c_str());
    return false;
  }
#define NPL_RESOLVE(ret, name, params)                                                 \
  api.name = (cu::name##_t)dlsym(h, #name);                                            \
  if (!api.name) {                                                                     \
    load_error = std::string("npu_launcher: cuda driver unavailable: ") + lib +        \
                 " lacks " #name;                                                      \
    driver_fail(E_DRIVER, "%s", load_error.c_str());        \
    return false;                                                                      \
  }
  NPL_CUDA_FUNCTIONS(NPL_RESOLVE)
#undef NPL_RESOLVE
  cu::CUresult r = api.cuInit(0);
  if (r != cu::CUDA_SUCCESS) {
    load_error = std::string("npu_launcher: cuda driver unavailable: cuInit failed: ") +
                 error_string(r);
    driver_fail(E_DRIVER, "%s", load_error.c_str());
    return false;
  }
  loaded = true;
  return true;
}

bool cuda_capability(int device, int *major, int *minor) {
  if (!cuda_load_api()) return false;
  cu::CUdevice dev;
  cu::CUresult r = api.cuDeviceGet(&dev, device);
  if (r != cu::CUDA_SUCCESS) return fail(E_DRIVER, "cuDeviceGet", r);
  r = api.cuDeviceGetAttribute(major, cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  if (r == cu::CUDA_SUCCESS)
    r = api.cuDeviceGetAttribute(minor, cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  if (r != cu::CUDA_SUCCESS) return fail(E_DRIVER, "cuDeviceGetAttribute", r);
  return true;
}

bool cuda_bind(Kernel *k, const char *cubin, size_t cubin_size, int num_warps, int shared,
               int arch, int device, int trailing_null_params, int *n_regs, int *n_spills) {
  if (!cuda_load_api()) return false;
  int major = 0, minor = 0;
  if (!cuda_capability(device, &major, &minor)) return false;
  if (major * 10 + minor != arch) {
    return driver_fail(E_DESCRIPTOR, "npu_launcher: kernel '%s' was compiled for sm_%d but cuda:%d is sm_%d%d",
                       k->name.c_str(), arch, device, major, minor);
  }
  (void)cubin_size;  // cuModuleLoadData reads the ELF's own size
  cu::CUdevice dev;
  cu::CUcontext ctx = nullptr;
  cu::CUresult r = api.cuDeviceGet(&dev, device);
  if (r == cu::CUDA_SUCCESS) r = api.cuDevicePrimaryCtxRetain(&ctx, dev);
  if (r != cu::CUDA_SUCCESS) return fail(E_LAUNCH, "cuDevicePrimaryCtxRetain", r);
  cu::CUcontext cur = nullptr;
  api.cuCtxGetCurrent(&cur);
  if (cur != ctx) api.cuCtxSetCurrent(ctx);  // load into the device's primary context
  cu::CUmodule mod = nullptr;
  cu::CUfunction fn = nullptr;
  r = api.cuModuleLoadData(&mod, cubin);
  if (r != cu::CUDA_SUCCESS) {
    if (cur != ctx) api.cuCtxSetCurrent(cur);
    return fail(E_LAUNCH, "cuModuleLoadData of '" + k->name + "'", r);
  }
  r = api.cuModuleGetFunction(&fn, mod, k->name.c_str());
  if (r != cu::CUDA_SUCCESS) {
    api.cuModuleUnload(mod);
    if (cur != ctx) api.cuCtxSetCurrent(cur);
    return fail(E_LAUNCH, "cuModuleGetFunction('" + k->name + "')", r);
  }
  api.cuFuncGetAttribute(n_regs, cu::CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
  api.cuFuncGetAttribute(n_spills, cu::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn);
  *n_spills /= 4;
  int max_threads = 0;
  api.cuFuncGetAttribute(&max_threads, cu::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);
  const char *problem = nullptr;
  if (num_warps * 32 > max_threads) problem = "too many threads";
  if (!problem && shared > 49152) {  // above 48 KiB dynamic shared memory needs opting in
    int optin = 0, static_shared = 0;
    api.cuDeviceGetAttribute(&optin, cu::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
    api.cuFuncGetAttribute(&static_shared, cu::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
    if (shared > optin) problem = "not enough shared memory";
    else if (api.cuFuncSetAttribute(fn, cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    optin - static_shared) != cu::CUDA_SUCCESS)
      problem = "cannot opt in to large shared memory";
  }
  if (cur != ctx) api.cuCtxSetCurrent(cur);
  if (problem) {
    api.cuModuleUnload(mod);
    return driver_fail(E_LAUNCH,
                       "npu_launcher: kernel '%s' cannot run on cuda:%d: %s (num_warps=%d, "
                       "shared=%d, max threads %d)",
                       k->name.c_str(), device, problem, num_warps, shared, max_threads);
  }
  k->cuda.module = mod;
  k->cuda.function = fn;
  k->cuda.context = ctx;
  k->cuda.block_x = (uint32_t)(32 * num_warps);
  k->cuda.shared = (uint32_t)shared;
  k->cuda.trailing_null_params = trailing_null_params;
  return true;
}

bool cuda_launch(Kernel *k, uint32_t grid[3], uint64_t stream, Slot *slots) {
  void *params[kMaxArgs + 4];
  Slot nulls[4] = {};
  size_t n = k->args.size();
  for (size_t i = 0; i < n; ++i) params[i] = &slots[i];
  for (int j = 0; j < k->cuda.trailing_null_params; ++j) params[n + j] = &nulls[j];
  const CudaBinding &b = k->cuda;
  cu::CUresult r = api.cuLaunchKernel((cu::CUfunction)b.function, grid[0], grid[1], grid[2],
                                      b.block_x, 1, 1, b.shared, (cu::CUstream)stream, params,
                                      nullptr);
  if (r == cu::CUDA_ERROR_INVALID_CONTEXT) {  // a thread that never touched the device
    api.cuCtxSetCurrent((cu::CUcontext)b.context);
    r = api.cuLaunchKernel((cu::CUfunction)b.function, grid[0], grid[1], grid[2], b.block_x,
                           1, 1, b.shared, (cu::CUstream)stream, params, nullptr);
  }
  if (r != cu::CUDA_SUCCESS)
    return fail(E_LAUNCH, "cuLaunchKernel of '" + k->name + "'", r);
  return true;
}

void cuda_release(Kernel *k) {
  if (loaded && k->cuda.module) api.cuModuleUnload((cu::CUmodule)k->cuda.module);
  k->cuda.module = nullptr;
  k->cuda.function = nullptr;
}

}  // namespace npl
