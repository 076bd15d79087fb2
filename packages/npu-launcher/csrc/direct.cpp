// libnpu_launcher_direct.so: npu-launcher's C ABI (NplCApi, npu_launcher_capi.h) without
// Python, for a process that serves an AOTInductor package with no interpreter. One exported
// symbol, npl_direct_api(). Same contract as the capsule's table for cuda and ascend kernels:
//   load    - the descriptor file read here (descriptor_file.cpp, the checks of
//             descriptor.py), bound by the same driver code as the extension's (driver_cuda.cpp,
//             driver_ascend.cpp, compiled into both)
//   launch  - each argument validated as a Python call's is (count, device, dtype, alignment,
//             integer divisibility; grid range), then written into the driver's slots: a tensor
//             argument's data pointer, device and dtype come from libtorch's AOTI shim
//             (aoti_torch_get_data_ptr, ...), found in the process; the dtype and device codes
//             from the shim too (aoti_torch_dtype_float32(), ...), never hard-coded
// npu-sim's kernels (Triton's interpreter) are Python: a sim descriptor is refused here.
// Errors: a per-thread message written into the caller's err buffer; nothing is thrown.
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

#include "descriptor_file.h"
#include "drivers.h"
#include "npu_launcher_capi.h"

namespace npl {

namespace {
thread_local std::string t_error;
}

bool driver_fail(ErrKind, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  t_error = msg;
  return false;
}

namespace {

typedef int32_t (*ptr_getter)(void *, void **);
typedef int32_t (*i32_getter)(void *, int32_t *);
typedef int32_t (*code_fn)();

// libtorch's AOTI shim in this process (the model .so links libtorch; a Python process that
// imported torch has libtorch_cpu.so loaded, maybe not globally: then by its soname)
struct Shim {
  ptr_getter data_ptr = nullptr;
  i32_getter device_type = nullptr, device_index = nullptr, dtype = nullptr;
  void *lib = nullptr;
  bool ok = false;

  void *find(const char *name) {
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f && lib) f = dlsym(lib, name);
    return f;
  }
  int32_t code(const std::string &fn) {  // -1: unknown to this torch
    code_fn f = (code_fn)find(fn.c_str());
    return f ? f() : -1;
  }
};

Shim &shim() {
  static Shim s;
  static std::once_flag once;
  std::call_once(once, [] {
    s.lib = dlopen("libtorch_cpu.so", RTLD_LAZY | RTLD_NOLOAD);
    s.data_ptr = (ptr_getter)s.find("aoti_torch_get_data_ptr");
    s.device_type = (i32_getter)s.find("aoti_torch_get_device_type");
    s.device_index = (i32_getter)s.find("aoti_torch_get_device_index");
    s.dtype = (i32_getter)s.find("aoti_torch_get_dtype");
    s.ok = s.data_ptr && s.device_type && s.device_index && s.dtype;
  });
  return s;
}

// Triton pointee type -> the name of the shim's dtype function (descriptor.py's
// POINTEE_TYPES; fp8e4b15 has no torch dtype and stays unchecked, as in Python)
const char *torch_dtype(const std::string &pointee) {
  static const char *const table[][2] = {
      {"i1", "bool"}, {"i8", "int8"}, {"i16", "int16"}, {"i32", "int32"}, {"i64", "int64"},
      {"u8", "uint8"}, {"u16", "uint16"}, {"u32", "uint32"}, {"u64", "uint64"},
      {"fp16", "float16"}, {"bf16", "bfloat16"}, {"fp32", "float32"}, {"fp64", "float64"},
      {"fp8e4nv", "float8_e4m3fn"}, {"fp8e5", "float8_e5m2"},
      {"fp8e4b8", "float8_e4m3fnuz"}, {"fp8e5b16", "float8_e5m2fnuz"}};
  for (const auto &row : table)
    if (pointee == row[0]) return row[1];
  return nullptr;
}

// a shim code back to torch's name, for messages ("code N" if this torch has no such name)
std::string dtype_name(int32_t code) {
  static const char *const names[] = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                      "uint64", "float16", "bfloat16", "float32", "float64", "float8_e4m3fn",
                                      "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "complex64"};
  for (const char *n : names)
    if (shim().code(std::string("aoti_torch_dtype_") + n) == code) return std::string("torch.") + n;
  return "dtype code " + std::to_string(code);
}

std::string device_name(int32_t type, int32_t index) {
  static const char *const names[][2] = {{"cpu", "cpu"}, {"cuda", "cuda"}, {"privateuse1", "npu"}, {"xpu", "xpu"},
                                         {"mps", "mps"}};
  std::string name = "device type " + std::to_string(type);
  for (const auto &n : names)
    if (shim().code(std::string("aoti_torch_device_type_") + n[0]) == type) name = n[1];
  return index >= 0 && name != "cpu" ? name + ":" + std::to_string(index) : name;
}

int kind_of(const std::string &type) {
  static const char *const names[K_COUNT] = {"*", "i1", "i8", "i16", "i32", "i64", "u8", "u16",
                                             "u32", "u64", "fp16", "bf16", "fp32", "fp64"};
  if (!type.empty() && type[0] == '*') return K_PTR;
  for (int i = 1; i < K_COUNT; ++i)
    if (type == names[i]) return i;
  return -1;
}


void write_err(char *err, size_t n, const std::string &msg) {
  if (err && n) std::snprintf(err, n, "%s", msg.c_str());
}

std::mutex g_load_mutex;  // loads are rare; the drivers' one-time setup is not thread-safe

void *load(const char *path, int device, char *err, size_t n) {
  std::lock_guard<std::mutex> lock(g_load_mutex);  // several models may load kernels at once
  DescriptorFile d;
  std::string why;
  if (!path || !read_descriptor_file(path, d, why)) {
    write_err(err, n, path ? why : "npu_launcher: no descriptor path");
    return nullptr;
  }
  if (d.backend != "cuda" && d.backend != "npu") {
    write_err(err, n, "npu_launcher: kernel '" + d.name + "' targets '" + d.backend +
                          "': the Python-free launcher runs cuda and npu (Ascend) kernels; npu-sim's "
                          "kernels run in Triton's interpreter, through the Python C ABI");
    return nullptr;
  }
  if (d.args.size() + d.n_specialized > (size_t)kMaxArgs) {
    write_err(err, n, "npu_launcher: kernel '" + d.name + "' has more than " + std::to_string(kMaxArgs) + " arguments");
    return nullptr;
  }
  Shim &s = shim();
  if (!s.ok) {
    write_err(err, n, "npu_launcher: libtorch's AOTI shim (aoti_torch_get_data_ptr, ...) is not in this process: "
                      "the direct launcher reads tensors through it");
    return nullptr;
  }
  auto kernel = std::make_unique<Kernel>();
  Kernel &k = *kernel;
  k.name = d.name;
  k.driver = d.backend == "cuda" ? D_CUDA : D_ASCEND;
  k.device_type_name = d.device_type.empty() ? (d.backend == "cuda" ? "cuda" : "npu") : d.device_type;
  k.device_type = s.code(k.device_type_name == "cuda" ? "aoti_torch_device_type_cuda"
                                                      : "aoti_torch_device_type_privateuse1");
  k.device_index = device < 0 ? 0 : device;
  k.device_label = k.device_type_name + ":" + std::to_string(k.device_index);
  for (size_t i = 0; i < d.args.size(); ++i) {
    const DescriptorArg &da = d.args[i];
    int kind = kind_of(da.type);
    if (kind < 0) {
      write_err(err, n, "npu_launcher: kernel '" + d.name + "': argument '" + da.name + "' has type " + da.type +
                            ", which the launcher cannot pass");
      return nullptr;
    }
    ArgSpec a;
    a.kind = (ArgKind)kind;
    a.align = da.align;
    a.dtype_obj = nullptr;
    a.dtype_code = -1;
    a.name = da.name;
    a.type = da.type;
    if (kind == K_PTR) {
      const char *dt = torch_dtype(da.type.substr(1));
      if (dt) a.dtype_code = s.code(std::string("aoti_torch_dtype_") + dt);
    }
    k.args.push_back(std::move(a));
  }
  t_error.clear();
  bool bound;
  if (k.driver == D_CUDA) {
    if (!std::all_of(d.arch.begin(), d.arch.end(), ::isdigit) || d.arch.empty()) {
      write_err(err, n, "npu_launcher: kernel '" + d.name + "': cuda arch '" + d.arch + "' is not a compute capability");
      return nullptr;
    }
    int regs = 0, spills = 0;
    bound = cuda_bind(&k, d.binary.data(), d.binary.size(), d.num_warps, d.shared, std::stoi(d.arch), k.device_index,
                      d.trailing_null_params, &regs, &spills);
  } else {
    k.ascend.ffts = d.ffts;
    k.ascend.simt_only = d.simt_only;
    bound = ascend_bind(&k, d.binary.data(), d.binary.size(), d.mix_mode, d.arch, k.device_index);
  }
  if (!bound) {
    write_err(err, n, t_error);
    return nullptr;
  }
  return kernel.release();
}

int num_args(void *h) { return (int)static_cast<Kernel *>(h)->args.size(); }

bool fill_pointer(const Kernel &k, int i, void *handle, Slot *slot) {
  const ArgSpec &a = k.args[i];
  slot->u64 = 0;
  if (!handle) return true;  // a null pointer, as None from Python
  Shim &s = shim();
  void *ptr = nullptr;
  int32_t dev = -1, idx = -1, dt = -1;
  if (s.data_ptr(handle, &ptr) != 0 || s.device_type(handle, &dev) != 0 || s.device_index(handle, &idx) != 0 ||
      s.dtype(handle, &dt) != 0)
    return driver_fail(E_ARGUMENT, "npu_launcher: kernel '%s': argument '%s' (#%d): cannot read the tensor",
                       k.name.c_str(), a.name.c_str(), i);
  if (dev != k.device_type || (k.device_index >= 0 && idx != k.device_index))
    return driver_fail(E_ARGUMENT, "npu_launcher: kernel '%s': argument '%s' (#%d): tensor is on %s, the kernel runs on %s",
                       k.name.c_str(), a.name.c_str(), i, device_name(dev, idx).c_str(), k.device_label.c_str());
  if (a.dtype_code >= 0 && dt != a.dtype_code)
    return driver_fail(E_ARGUMENT, "npu_launcher: kernel '%s': argument '%s' (#%d): tensor dtype is %s, the kernel was "
                       "compiled for %s (%s)",
                       k.name.c_str(), a.name.c_str(), i, dtype_name(dt).c_str(), a.type.c_str(),
                       dtype_name(a.dtype_code).c_str());
  uint64_t addr = (uint64_t)(uintptr_t)ptr;
  if (a.align > 1 && addr % a.align != 0)
    return driver_fail(E_ARGUMENT,
                       "npu_launcher: kernel '%s': argument '%s' (#%d): data pointer 0x%" PRIx64
                       " is not %u-byte aligned (the kernel was compiled assuming tt.divisibility=%u)",
                       k.name.c_str(), a.name.c_str(), i, addr, a.align, a.align);
  slot->u64 = addr;
  return true;
}

bool fill_scalar(const Kernel &k, int i, const void *p, Slot *slot) {
  const ArgSpec &a = k.args[i];
  slot->u64 = 0;
  long long v = 0;
  unsigned long long uv = 0;
  switch (a.kind) {
    case K_I1: v = *(const bool *)p; if (k.driver == D_ASCEND) slot->i32 = (int32_t)v; else slot->i8 = (int8_t)v; break;
    case K_I8: v = *(const int8_t *)p; slot->i8 = (int8_t)v; break;
    case K_I16: v = *(const int16_t *)p; slot->i16 = (int16_t)v; break;
    case K_I32: v = *(const int32_t *)p; slot->i32 = (int32_t)v; break;
    case K_I64: v = *(const int64_t *)p; slot->i64 = v; break;
    case K_U8: v = *(const uint8_t *)p; slot->u8 = (uint8_t)v; break;
    case K_U16: v = *(const uint16_t *)p; slot->u16 = (uint16_t)v; break;
    case K_U32: v = *(const uint32_t *)p; slot->u32 = (uint32_t)v; break;
    case K_U64: uv = *(const uint64_t *)p; slot->u64 = uv; break;
    case K_FP32: slot->f32 = *(const float *)p; return true;
    case K_FP64: slot->f64 = *(const double *)p; return true;
    default:
      return driver_fail(E_ARGUMENT_TYPE,
                         "npu_launcher: kernel '%s': argument %s of type %s cannot be passed through the C ABI",
                         k.name.c_str(), a.name.c_str(), a.type.c_str());
  }
  if (a.kind != K_U64) uv = (unsigned long long)v;
  if (a.align > 1 && (a.kind == K_U64 ? uv % a.align : (unsigned long long)(v % (long long)a.align)) != 0)
    return driver_fail(E_ARGUMENT,
                       "npu_launcher: kernel '%s': argument '%s' (#%d): %llu is not a multiple of %u "
                       "(the kernel was compiled assuming tt.divisibility=%u)",
                       k.name.c_str(), a.name.c_str(), i, a.kind == K_U64 ? uv : (unsigned long long)v, a.align,
                       a.align);
  return true;
}

int launch(void *h, uint32_t gx, uint32_t gy, uint32_t gz, void *stream, void **args, int nargs, char *err,
           size_t n) {
  Kernel &k = *static_cast<Kernel *>(h);
  if (nargs != (int)k.args.size()) {
    write_err(err, n, "npu_launcher: kernel '" + k.name + "' takes " + std::to_string(k.args.size()) +
                          " arguments, the C call passed " + std::to_string(nargs));
    return 1;
  }
  uint32_t grid[3] = {gx, gy, gz};
  for (uint32_t g : grid)
    if (g > (uint32_t)INT32_MAX) {
      write_err(err, n, "npu_launcher: kernel '" + k.name + "': grid " + std::to_string(g) + " is not in [0, 2**31)");
      return 1;
    }
  Slot slots[kMaxArgs];
  bool ok = true;
  for (int i = 0; ok && i < nargs; ++i)
    ok = k.args[i].kind == K_PTR ? fill_pointer(k, i, *(void *const *)args[i], &slots[i])
                                 : fill_scalar(k, i, args[i], &slots[i]);
  if (ok) {
    uint64_t s = (uint64_t)(uintptr_t)stream;
    ok = k.driver == D_CUDA ? cuda_launch(&k, grid, s, slots) : ascend_launch(&k, grid, s, slots);
  }
  if (!ok) {
    write_err(err, n, t_error);
    return 1;
  }
  return 0;
}

void release(void *h) {
  Kernel *k = static_cast<Kernel *>(h);
  if (!k) return;
  if (k->driver == D_CUDA) cuda_release(k);
  else ascend_release(k);
  delete k;
}

const NplCApi g_direct = {NPL_CAPI_VERSION, load, num_args, launch, release};

}  // namespace
}  // namespace npl

extern "C" __attribute__((visibility("default"))) const NplCApi *npl_direct_api(void) { return &npl::g_direct; }
