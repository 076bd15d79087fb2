// npu's AOTInductor header (torch._inductor.aoti_compile_and_package on an npu program): what
// npu-lowering's generated model code (cpp_wrapper.py, aot_mode) calls besides upstream's AOT
// runtime (aoti_include/common.h) and npu_common.h:
//   loadKernel / launchKernel  - npu-launcher's C ABI (npu_launcher_capi.h, included first by
//                                the generated header): a kernel's descriptor file, packed in
//                                the .pt2 next to the model .so (or embedded in it), bound
//                                into a launch object
//   NpuLoadedKernels           - the model's launch objects, released with the model
//   NpuStreamGuard             - the model's run on the runner's stream and device
//   npu_aoti_model_device      - the model's device: "npu[:i]" (the runner's device string)
//   npu_aoti_load_constants    - the model's weights, copied from the .so into device memory
//
// The model .so links no Python. Where kernels are triton-ascend's (NPU_DIRECT_LAUNCH) they
// launch through npu-launcher's C ABI without Python (libnpu_launcher_direct.so: descriptor
// file, argument packing, CANN's rtKernelLaunch), so a C++ server needs no interpreter; where
// that library cannot be opened and Python runs, the capsule below is the fallback. On
// npu-sim every kernel runs in Triton's interpreter (Python): the C ABI is the capsule of
// npu-launcher's Python module, imported through the Python C API found in the process at run
// time (dlsym), so the process that loads the package must run a Python interpreter with
// torch imported (aoti_load_package does; a C++ program starts one: Py_Initialize, then
// `import torch`). Without one, loadKernel fails with that message.
#pragma once

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>
#include <torch/csrc/inductor/aoti_include/common.h>

#include "npu_common.h"

#define NPU_AOTI_CHECK(cond, msg)                                                          \
  do {                                                                                     \
    if (!(cond)) throw std::runtime_error(std::string("npu AOTInductor model: ") + (msg)); \
  } while (0)

namespace npu_aoti {

// the few Python C API functions the capsule import needs, found in the process
struct PythonApi {
  int (*is_initialized)() = nullptr;
  int (*gil_ensure)() = nullptr;  // PyGILState_STATE is an int-sized enum
  void (*gil_release)(int) = nullptr;
  void* (*capsule_import)(const char*, int) = nullptr;
  void* (*import_module)(const char*) = nullptr;
  void (*err_fetch)(void**, void**, void**) = nullptr;
  void* (*object_str)(void*) = nullptr;
  const char* (*unicode_utf8)(void*) = nullptr;
  void (*decref)(void*) = nullptr;
};

inline const PythonApi* python() {
  static PythonApi api;
  static bool found = false;
  if (!found) {
    api.is_initialized = (int (*)())dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    api.gil_ensure = (int (*)())dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
    api.gil_release = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
    api.capsule_import = (void* (*)(const char*, int))dlsym(RTLD_DEFAULT, "PyCapsule_Import");
    api.import_module = (void* (*)(const char*))dlsym(RTLD_DEFAULT, "PyImport_ImportModule");
    api.err_fetch = (void (*)(void**, void**, void**))dlsym(RTLD_DEFAULT, "PyErr_Fetch");
    api.object_str = (void* (*)(void*))dlsym(RTLD_DEFAULT, "PyObject_Str");
    api.unicode_utf8 = (const char* (*)(void*))dlsym(RTLD_DEFAULT, "PyUnicode_AsUTF8");
    api.decref = (void (*)(void*))dlsym(RTLD_DEFAULT, "Py_DecRef");
    found = api.is_initialized && api.gil_ensure && api.gil_release && api.capsule_import && api.import_module &&
        api.err_fetch &&
        api.object_str && api.unicode_utf8 && api.decref;
    if (!found) return nullptr;
  }
  return api.is_initialized() ? &api : nullptr;
}

// the pending Python error's message (cleared); call with the GIL
inline std::string python_error(const PythonApi* py) {
  void *type = nullptr, *value = nullptr, *tb = nullptr;
  py->err_fetch(&type, &value, &tb);
  std::string msg;
  if (value) {
    void* s = py->object_str(value);
    const char* c = s ? py->unicode_utf8(s) : nullptr;
    if (c) msg = c;
    if (s) py->decref(s);
  }
  for (void* o : {type, value, tb})
    if (o) py->decref(o);
  return msg;
}

// npu-launcher's C ABI as the capsule of its Python module (npu-sim's kernels are Python):
// NULL with the reason in why
inline const NplCApi* python_launcher(std::string& why) {
  const PythonApi* py = python();
  if (py == nullptr) {
    why = "no Python interpreter in this process: npu-launcher's C ABI is a Python capsule, and on npu-sim kernels "
          "run in Triton's interpreter. Start Python and `import torch` before loading the package "
          "(aoti_load_package does; from C++: Py_Initialize(), then PyRun_SimpleString(\"import torch\"))";
    return nullptr;
  }
  int gil = py->gil_ensure();
  // PyCapsule_Import imports only the top-level package; the capsule's module first
  void* module = py->import_module("npu_launcher.capi");
  if (module) py->decref(module);
  const NplCApi* got = module ? static_cast<const NplCApi*>(py->capsule_import(NPL_CAPI_CAPSULE, 0)) : nullptr;
  if (got == nullptr) why = std::string("cannot import npu-launcher's C ABI (") + NPL_CAPI_CAPSULE + "): " + python_error(py);
  py->gil_release(gil);
  if (got != nullptr && got->version != NPL_CAPI_VERSION) {
    why = "npu-launcher C ABI version " + std::to_string(got->version) + ", expected " + std::to_string(NPL_CAPI_VERSION);
    return nullptr;
  }
  return got;
}

struct Launcher {
  const NplCApi* api = nullptr;
  bool direct = false;  // the Python-free library: usable after the interpreter is gone
};

// Which C ABI the model's kernels launch through, decided at the first kernel load: on
// Ascend the Python-free library, falling back to the Python capsule where an interpreter
// runs (a serving process without Python needs the library); elsewhere the capsule.
inline const Launcher& launcher_choice() {
  static const Launcher chosen = [] {
    Launcher l;
    std::string why_direct, why_python;
#ifdef NPU_DIRECT_LAUNCH
    l.api = npu_direct_launcher(why_direct);
    l.direct = l.api != nullptr;
#else
    why_direct = "the model's kernels are npu-sim's (Python)";
#endif
    if (l.api == nullptr) {
      l.api = python_launcher(why_python);
#ifdef NPU_DIRECT_LAUNCH
      if (l.api != nullptr) npu_direct_fallback_note("npu AOTInductor model", why_direct);
#endif
    }
    NPU_AOTI_CHECK(l.api, "no npu-launcher C ABI to launch kernels with.\n Python-free library (" NPL_DIRECT_LIBRARY
                          "): " + why_direct + "\n Python capsule: " + why_python);
    return l;
  }();
  return chosen;
}

inline const NplCApi* launcher() { return launcher_choice().api; }

}  // namespace npu_aoti

// The launch objects a model loaded (upstream's AOT codegen passes the kernels' loaded_modules_
// to loadKernel, as cuda's CUmodule list); released with the model, while Python still runs.
struct NpuLoadedKernels {
  std::vector<void*> handles;
  void push_back(void* h) { handles.push_back(h); }
  ~NpuLoadedKernels() {
    if (handles.empty()) return;
    const npu_aoti::Launcher& l = npu_aoti::launcher_choice();
    // the capsule's launch objects are Python objects: nothing to release them into once the
    // interpreter is gone (process exit)
    if (!l.direct && npu_aoti::python() == nullptr) return;
    for (void* h : handles) l.api->release(h);
  }
};

// A kernel's launch object from its npu-launcher descriptor file. The path is the one written
// at compile time; a packaged model finds the file in its package folder (cubin_dir), as
// upstream's cuda loadKernel finds its cubins.
static inline void* loadKernel(std::string path, const std::string& /*mangled_name*/, int /*shared_mem*/,
                               const std::optional<std::string>& cubin_dir = std::nullopt,
                               NpuLoadedKernels* loaded = nullptr) {
  if (cubin_dir) path = (std::filesystem::path(*cubin_dir) / std::filesystem::path(path).filename()).string();
  char err[1024] = {0};
  void* k = npu_aoti::launcher()->load(path.c_str(), -1, err, sizeof(err));
  NPU_AOTI_CHECK(k, "loading kernel descriptor " + path + " failed: " + err);
  if (loaded) loaded->push_back(k);
  return k;
}

namespace npu_aoti {
// The length of an npu-launcher descriptor (NPLKD1 | u32 header length | JSON header | binary)
// from its own header: the JSON's "binary_len" (npu-launcher writes it); 0 if it is not one.
inline size_t descriptor_size(const unsigned char* data) {
  if (std::memcmp(data, "NPLKD1", 6) != 0) return 0;
  uint32_t n = (uint32_t)data[6] | (uint32_t)data[7] << 8 | (uint32_t)data[8] << 16 | (uint32_t)data[9] << 24;
  const std::string header(reinterpret_cast<const char*>(data) + 10, n);
  const std::string key = "\"binary_len\":";
  size_t at = header.find(key);
  if (at == std::string::npos) return 0;
  return 10 + n + std::strtoull(header.c_str() + at + key.size(), nullptr, 10);
}
}  // namespace npu_aoti

// A kernel's launch object from its descriptor embedded in the model .so
// (aot_inductor.embed_kernel_binary: upstream links each descriptor file in as
// __<kernel>_start). The C ABI loads files: the bytes go into an anonymous in-memory file
// (memfd_create, nothing written to disk), loaded through its /proc/self/fd path.
static inline void* loadKernel(const unsigned char* embedded, const std::string& mangled_name, int /*shared_mem*/,
                               NpuLoadedKernels* loaded = nullptr) {
  const size_t size = npu_aoti::descriptor_size(embedded);
  NPU_AOTI_CHECK(size > 0, "the embedded kernel " + mangled_name + " is not an npu-launcher descriptor");
  const int fd = memfd_create(mangled_name.c_str(), MFD_CLOEXEC);
  NPU_AOTI_CHECK(fd >= 0, "memfd_create for the embedded kernel " + mangled_name + " failed");
  size_t done = 0;
  while (done < size) {
    const ssize_t w = ::write(fd, embedded + done, size - done);
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  char err[1024] = {0};
  void* k = done == size ? npu_aoti::launcher()->load(("/proc/self/fd/" + std::to_string(fd)).c_str(), -1, err,
                                                      sizeof(err))
                         : nullptr;
  ::close(fd);
  NPU_AOTI_CHECK(done == size, "writing the embedded kernel " + mangled_name + " to memory failed");
  NPU_AOTI_CHECK(k, "loading the embedded kernel " + mangled_name + " failed: " + err);
  if (loaded) loaded->push_back(k);
  return k;
}

// launch on the model's stream (the runner's; NULL: the device's default stream)
template <size_t N>
static inline void launchKernel(void* kernel, uint32_t gx, uint32_t gy, uint32_t gz, int /*num_warps*/,
                                int /*shared_mem*/, void* (&args)[N], void* stream) {
  const NplCApi* api = npu_aoti::launcher();
  int n = api->num_args(kernel);
  NPU_AOTI_CHECK(n == (int)N, "kernel takes " + std::to_string(n) + " arguments, the model passes " + std::to_string(N));
  char err[1024] = {0};
  int rc = api->launch(kernel, gx, gy, gz, stream, args, n, err, sizeof(err));
  NPU_AOTI_CHECK(rc == 0, std::string("launch failed: ") + err);
}

// The model's device. Upstream's AOTInductorModelBase parses only cpu/cuda/xpu/mps device
// strings: the generated constructor hands it "cpu[:i]" for "npu[:i]" (npu_aoti_base_device)
// and then sets the device type to PrivateUse1 (npu) here, before any constant is loaded.
static inline std::string npu_aoti_base_device(const std::string& device_str) {
  std::string type = device_str.substr(0, device_str.find(':'));
  NPU_AOTI_CHECK(type == "npu", "an npu model runs on device npu, not " + device_str);
  return "cpu" + device_str.substr(type.size());
}

static inline void npu_aoti_model_device(int32_t& device_type, int32_t& device_idx) {
  device_type = aoti_torch_device_type_privateuse1();
  if (device_idx < 0) {
    device_idx = c10::impl::getDeviceGuardImpl(c10::DeviceType::PrivateUse1)->getDevice().index();
  }
}

// The stream a model runs on (upstream's AOT codegen: `<guard> stream_guard(stream, device_idx_)`):
// the runner's raw stream handle, NULL for the device's current one. On npu-sim a raw stream
// is the stream's id (npu-lowering's runtime.device.get_raw_stream), made current here; on
// Ascend (NPU_AOTI_ASCEND, defined by the generated header where kernels are triton-ascend's)
// it is torch_npu's aclrtStream, which kernels get as is (launchKernel), and only the device
// is guarded.
class NpuStreamGuard {
 public:
  NpuStreamGuard(void* stream, int32_t device_idx) : device_(device_idx) {
#ifndef NPU_AOTI_ASCEND
    if (stream != nullptr) {
      stream_.emplace(c10::Stream::unpack3(static_cast<c10::StreamId>(reinterpret_cast<intptr_t>(stream)),
                                           static_cast<c10::DeviceIndex>(device_idx), c10::DeviceType::PrivateUse1));
    }
#endif
  }

 private:
  NpuDeviceGuard device_;
  std::optional<c10::StreamGuard> stream_;
};

// The weights (the constants upstream's AOT build embeds in the model .so) in device memory.
// Upstream's AOTInductorModelBase::load_constants copies them into one blob of device memory
// under USE_CUDA/USE_XPU/USE_MPS and into host memory otherwise, and npu's memory is neither
// (npu-sim's allocator owns it; on Ascend it is ACL's): the generated constructor calls this
// after the constants are described, then leaves the base nothing to load. One device storage
// a constant, filled from the embedded bytes, each tensor a view of its storage (offset, strides).
template <typename Model>
static inline void npu_aoti_load_constants(Model& model, torch::aot_inductor::ConstantMap& map,
                                           const uint8_t* embedded, int32_t device_idx) {
  const c10::Device device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device_idx));
  size_t bytes_read = 0;
  for (size_t i = 0; i < model.num_constants(); ++i) {
    if (model.constant_from_folded(static_cast<int64_t>(i))) continue;
    const int64_t n = static_cast<int64_t>(model.constant_data_size(static_cast<int64_t>(i)));
    at::Tensor storage = at::empty({std::max<int64_t>(n, 1)}, at::TensorOptions().dtype(at::kByte).device(device));
    if (n > 0) {
      storage.narrow(0, 0, n).copy_(at::from_blob(const_cast<uint8_t*>(embedded + bytes_read), {n}, at::kByte));
    }
    bytes_read += static_cast<size_t>(n);
    const auto ndim = model.constant_ndim(static_cast<int64_t>(i));
    const auto dtype = static_cast<c10::ScalarType>(model.constant_dtype(static_cast<int64_t>(i)));
    at::Tensor t = at::for_blob(storage.data_ptr(), c10::IntArrayRef(model.constant_shape(static_cast<int64_t>(i)), ndim))
                       .strides(c10::IntArrayRef(model.constant_stride(static_cast<int64_t>(i)), ndim))
                       .storage_offset(model.constant_offset(static_cast<int64_t>(i)))
                       .deleter([storage](void*) {})  // the tensor keeps its storage
                       .options(at::TensorOptions().dtype(dtype).device(device))
                       .make_tensor();
    map.emplace(model.constant_name(static_cast<int64_t>(i)), torch::aot_inductor::new_tensor_handle(std::move(t)));
  }
}
