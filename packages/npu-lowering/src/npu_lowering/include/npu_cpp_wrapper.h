// npu's cpp_wrapper header (JIT, torch.compile with cpp_wrapper=True): upstream's common
// cpp_wrapper header plus what npu-lowering's generated C++ (cpp_wrapper.py) calls:
//   loadKernel / launchKernel  - npu-launcher's C ABI (npu_launcher_capi.h, included first
//                                by the generated header npu.h), one launch object a kernel
//   npu_get_current_stream     - the stream the Python wrapper would launch on
//   (tensor handles, NpuDeviceGuard and the extern kernels' C shims: npu_common.h, shared with
//   the AOTInductor header npu_aoti.h)
//   startKernelCompile, runTritonKernelWithAutotune - the first run of a kernel in Python
//                                (compile, autotune, launch), as upstream's lazy compile does
//                                for cuda; it returns the kernel's npu-launcher descriptor.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include <torch/csrc/inductor/aoti_include/kernel_compile_result.h>
#include <torch/csrc/inductor/cpp_wrapper/common.h>

#include "npu_common.h"

#include <stdexcept>

// a failed check throws (the entry's caller turns it into a Python RuntimeError)
#define NPU_CHECK(cond, msg)                                                  \
  do {                                                                        \
    if (!(cond)) throw std::runtime_error(std::string("npu cpp_wrapper: ") + (msg)); \
  } while (0)

static const NplCApi* npl_api_ = nullptr;
static PyObject* npu_cpp_wrapper_runtime_ = nullptr;  // npu_lowering.cpp_wrapper_runtime
static PyObject* _module_pending_kernels = nullptr;

// npu-launcher's C ABI: where kernels are triton-ascend's the Python-free library (no Python
// object per launch), else (or when it cannot be opened) the capsule of npu_launcher.capi
static inline const NplCApi* nplApi() {
#ifdef NPU_DIRECT_LAUNCH
  if (npl_api_ == nullptr) {
    std::string why;
    npl_api_ = npu_direct_launcher(why);
    if (npl_api_ == nullptr) npu_direct_fallback_note("npu cpp_wrapper", why);
  }
#endif
  if (npl_api_ == nullptr) {
    py::gil_scoped_acquire_simple acquire;
    npl_api_ = static_cast<const NplCApi*>(PyCapsule_Import(NPL_CAPI_CAPSULE, 0));
    NPU_CHECK(npl_api_, std::string("cannot import npu-launcher's C ABI (") + NPL_CAPI_CAPSULE + ")");
    NPU_CHECK(npl_api_->version == NPL_CAPI_VERSION, "npu-launcher C ABI version " + std::to_string(npl_api_->version) +
                                                         ", expected " + std::to_string(NPL_CAPI_VERSION));
  }
  return npl_api_;
}

// the pending Python error as "Type: message" (cleared), for the C++ exception's message
static inline std::string npuPyErr() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  std::string msg;
  if (value) {
    RAIIPyObject s = PyObject_Str(value);
    const char* c = s ? PyUnicode_AsUTF8(s) : nullptr;
    msg = std::string(": ") + Py_TYPE(value)->tp_name + ": " + (c ? c : "");
  }
  PyErr_Clear();
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  return msg;
}

static inline PyObject* npuRuntime() {
  if (npu_cpp_wrapper_runtime_ == nullptr) {
    npu_cpp_wrapper_runtime_ = PyImport_ImportModule("npu_lowering.cpp_wrapper_runtime");
    NPU_CHECK(npu_cpp_wrapper_runtime_, std::string("cannot import npu_lowering.cpp_wrapper_runtime"));
  }
  return npu_cpp_wrapper_runtime_;
}

// The kernel's launch object, from its descriptor file (cubin_dir: unused, descriptors are
// loaded by absolute path in JIT mode).
static inline void* loadKernel(const std::string& path, const std::string& /*mangled_name*/, int /*shared_mem*/,
                               const std::optional<std::string>& /*cubin_dir*/ = std::nullopt) {
  char err[1024] = {0};
  void* k = nplApi()->load(path.c_str(), -1, err, sizeof(err));
  NPU_CHECK(k, std::string("loading ") + std::string(path) + std::string(" failed: ") + std::string(err));
  return k;
}

// upstream's lazy launch passes Triton's two scratch pointers (global, profile) after the
// kernel's arguments; npu-launcher kernels take none (it refuses kernels that need scratch),
// so they must be null here and are dropped.
template <size_t N>
static inline void launchKernel(void* kernel, uint32_t gx, uint32_t gy, uint32_t gz, int /*num_warps*/,
                                int /*shared_mem*/, void* (&args)[N], void* stream) {
  const NplCApi* api = nplApi();
  int n = api->num_args(kernel);
  NPU_CHECK(n == (int)N || n + 2 == (int)N, "kernel takes " + std::to_string(n) + " arguments, the wrapper passes " +
                                               std::to_string(N));
  for (int i = n; i < (int)N; ++i) {
    NPU_CHECK(*static_cast<void**>(args[i]) == nullptr, "npu kernels cannot use Triton scratch memory");
  }
  char err[1024] = {0};
  int rc = api->launch(kernel, gx, gy, gz, stream, args, n, err, sizeof(err));
  NPU_CHECK(rc == 0, std::string("launch failed: ") + err);
}

// The raw stream the Python wrapper launches on (npu_lowering.runtime.device.get_raw_stream:
// torch_npu's aclrtStream on Ascend, the stream id on npu-sim).
static inline AOTITorchError npu_get_current_stream(int32_t device, void** out) {
  py::gil_scoped_acquire_simple acquire;
  RAIIPyObject r = PyObject_CallMethod(npuRuntime(), "get_raw_stream", "i", device);
  if (!r) return AOTI_TORCH_FAILURE;
  *out = PyLong_AsVoidPtr(r);
  return PyErr_Occurred() ? AOTI_TORCH_FAILURE : AOTI_TORCH_SUCCESS;
}

// ---- first run of each kernel in Python (upstream's lazy compile, npu's runtime module) ----

static inline void loadLazyCompileFuncs() { (void)npuRuntime(); }

static inline void startKernelCompile(PyObject* pending, const std::string& name, const std::string& source) {
  py::gil_scoped_acquire_simple acquire;
  RAIIPyObject r = PyObject_CallMethod(npuRuntime(), "start_kernel_compile", "Oss", pending, name.c_str(),
                                       source.c_str());
  if (!r) throw std::runtime_error("npu cpp_wrapper: starting the compile of " + name + " failed" + npuPyErr());
}

template <typename T>
static inline PyObject* npuArgToPython(const T& arg) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, AtenTensorHandle>) {
    return torch_python_thp_variable_wrap(*torch::aot_inductor::tensor_handle_to_tensor_pointer(arg));
  } else if constexpr (std::is_same_v<D, torch::aot_inductor::RAIIAtenTensorHandle>) {
    return torch_python_thp_variable_wrap(*torch::aot_inductor::tensor_handle_to_tensor_pointer(arg.get()));
  } else if constexpr (std::is_same_v<D, bool>) {
    return Py_NewRef(arg ? Py_True : Py_False);
  } else if constexpr (std::is_integral_v<D>) {
    return PyLong_FromLongLong(static_cast<long long>(arg));
  } else if constexpr (std::is_floating_point_v<D>) {
    return PyFloat_FromDouble(static_cast<double>(arg));
  } else {
    return npuArgToPython(npuTensorHandle(arg));
  }
}

static inline std::vector<int> npuIntList(PyObject* obj, const char* attr) {
  RAIIPyObject v = PyObject_GetAttrString(obj, attr);
  NPU_CHECK(v && PyList_Check(v.get()), std::string("expected a list ") + std::string(attr));
  std::vector<int> out;
  for (Py_ssize_t i = 0; i < PyList_Size(v); ++i) out.push_back((int)PyLong_AsLong(PyList_GetItem(v, i)));
  return out;
}

static inline int npuIntAttr(PyObject* obj, const char* attr, int none_value = -1) {
  RAIIPyObject v = PyObject_GetAttrString(obj, attr);
  NPU_CHECK(v, std::string("missing ") + std::string(attr));
  return Py_IsNone(v.get()) ? none_value : (int)PyLong_AsLong(v);
}

template <typename... Args>
static inline LazyKernelCompileResult runTritonKernelWithAutotune(PyObject* pending, const std::string& name,
                                                                  void* stream, const Args&... kernel_args) {
  py::gil_scoped_acquire_simple acquire;
  RAIIPyObject args = PyList_New(sizeof...(Args));
  NPU_CHECK(args, std::string("cannot build the argument list"));
  size_t idx = 0;
  auto add = [&](PyObject* o) {
    NPU_CHECK(o, std::string("cannot convert an argument of ") + std::string(name));
    PyList_SetItem(args, idx++, o);
  };
  int dummy[] = {0, (add(npuArgToPython(kernel_args)), 0)...};
  (void)dummy;
  RAIIPyObject r = PyObject_CallMethod(npuRuntime(), "run_kernel_first", "OsNO", pending, name.c_str(),
                                       PyLong_FromVoidPtr(stream), args.get());
  if (!r) throw std::runtime_error("npu cpp_wrapper: first run of " + name + " failed" + npuPyErr());
  LazyKernelCompileResult out;
  RAIIPyObject path = PyObject_GetAttrString(r, "cubin_path");
  RAIIPyObject mangled = PyObject_GetAttrString(r, "mangled_name");
  NPU_CHECK(path && mangled, std::string("bad compile result for ") + std::string(name));
  out.cubin_path = PyUnicode_AsUTF8(path);
  out.mangled_name = PyUnicode_AsUTF8(mangled);
  out.num_warps = npuIntAttr(r, "num_warps");
  out.shared_mem = npuIntAttr(r, "shared_mem");
  out.xblocks = npuIntList(r, "xblocks");
  out.yblocks = npuIntList(r, "yblocks");
  out.zblocks = npuIntList(r, "zblocks");
  out.r0blocks = npuIntList(r, "r0blocks");
  out.rsplit = npuIntAttr(r, "rsplit");
  out.rsplit_size = npuIntAttr(r, "rsplit_size");
  out.config_index = npuIntAttr(r, "config_index");
  out.global_scratch = npuIntAttr(r, "global_scratch");
  out.profile_scratch = npuIntAttr(r, "profile_scratch");
  return out;
}

