// Shared declarations of the native launcher: argument kinds, the pre-bound launch object,
// and the hooks each driver implements. No torch, CUDA or CANN header is included anywhere:
// drivers are opened with dlopen and their few functions are declared in *_api.h.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>
#include <vector>

namespace npl {

// Kernel argument kinds; the numbers are the wire format used by bind() in Python.
enum ArgKind : int {
  K_PTR = 0, K_I1, K_I8, K_I16, K_I32, K_I64, K_U8, K_U16, K_U32, K_U64,
  K_FP16, K_BF16, K_FP32, K_FP64, K_COUNT
};

struct ArgSpec {
  ArgKind kind;
  uint32_t align;        // pointer/int divisibility the kernel was compiled for (1 = none)
  int32_t dtype_code;    // c10::ScalarType code the pointer must have, -1 = unchecked
  PyObject *dtype_obj;   // same, as a torch.dtype for the slow path (owned ref or null)
  std::string name;
  std::string type;      // Triton signature type, e.g. "*fp32", for messages
};

// A kernel parameter the call passes but the binary does not take: Triton specialized it into
// a constant when compiling (an int equal to 1, None, ...). Like Triton's own launcher, a
// launch drops it; with ``check`` the passed value must equal ``value``, since a static launch
// cannot switch to another specialization as Triton's JIT would (not for None: Inductor
// passes a dummy for it). The sim driver hands the interpreter ``value`` where it is known.
struct SpecializedArg {
  Py_ssize_t position;   // among the call's kernel arguments
  PyObject *value;       // owned; null: not known exactly (e.g. a dtype recorded by name)
  bool check;
  std::string name;
};

enum DriverKind : int { D_CUDA = 0, D_ASCEND = 1, D_SIM = 2 };

// Per-call argument values after validation: 8 bytes per argument.
union Slot {
  uint64_t u64; int64_t i64; uint32_t u32; int32_t i32; uint16_t u16; int16_t i16;
  uint8_t u8; int8_t i8; float f32; double f64; void *ptr;
};

struct CudaBinding {
  void *module = nullptr;     // CUmodule
  void *function = nullptr;   // CUfunction
  void *context = nullptr;    // primary context, made current if a thread has none
  uint32_t block_x = 0;
  uint32_t shared = 0;
  int trailing_null_params = 0;   // Triton's global/profile scratch pointers
};

struct AscendBinding {
  void *bin_handle = nullptr;
  void *stub = nullptr;           // function stub registered for the kernel
  bool ffts = false;              // first field is the C2C control address
  bool simt_only = false;         // no syncBlockLock/workspace fields
  std::vector<uint32_t> offsets;  // byte offset of each argument in the packed struct
  uint32_t grid_offset = 0;       // gridX, gridY, gridZ follow the arguments
  uint32_t size = 0;              // sizeof(packed struct)
};

struct SimBinding {
  PyObject *entry = nullptr;      // npu_inductor.sim_launch:launch
  PyObject *fn = nullptr;         // the Triton JITFunction rebuilt from the descriptor
  PyObject *constexprs = nullptr; // dict
};

struct Kernel {
  std::string name;
  std::vector<ArgSpec> args;              // what the binary takes, in order
  std::vector<SpecializedArg> specialized;
  // per call position: index into args (>= 0) or -1 - index into specialized; empty when
  // nothing was specialized (the call's kernel arguments are args)
  std::vector<int> call_plan;
  Py_ssize_t call_count() const { return (Py_ssize_t)(args.size() + specialized.size()); }
  DriverKind driver;
  int device_type;   // c10::DeviceType code tensors must have
  int device_index;  // -1: any index
  std::string device_label;  // "cuda:0", for messages
  std::string device_type_name;  // "cuda", "npu": what tensor.device.type must say
  CudaBinding cuda;
  AscendBinding ascend;
  SimBinding sim;
};

// The pre-bound launch object: a CPython type with per-instance vectorcall.
struct LaunchObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  Kernel *kernel;
};

constexpr int kMaxArgs = 256;

// launch_object.cpp
PyTypeObject *launch_object_type();
PyObject *make_launch_object(Kernel *kernel);  // takes ownership of kernel
// call checks (a false return has set the Python error, naming the kernel) and the launch
// itself, shared by the launch object and its grid slots
bool read_grid(const Kernel *k, PyObject *obj, const char *which, uint32_t *out);
bool read_stream(const Kernel *k, PyObject *obj, uint64_t *out);
bool no_keywords(const Kernel *k, PyObject *kwnames);
bool count_error(const Kernel *k, const char *before, Py_ssize_t extra, Py_ssize_t got);
// kargs: the call's k->call_count() kernel arguments (specialized ones included)
PyObject *launch_args(Kernel *k, uint32_t grid[3], uint64_t stream, PyObject *const *kargs);

// grid_slot.cpp: the launch object's at() method
PyObject *launch_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

// errors.cpp: exception classes defined in Python (npu_launcher.errors)
extern PyObject *ErrArgument;      // KernelArgumentError (ValueError)
extern PyObject *ErrArgumentType;  // KernelArgumentTypeError (TypeError)
extern PyObject *ErrLaunch;        // LaunchFailed
extern PyObject *ErrDriver;        // DriverUnavailable
extern PyObject *ErrDescriptor;    // DescriptorError
PyObject *err_or(PyObject *e, PyObject *fallback);

// tensor_access.cpp
// Pointer argument i: None, an int address or a tensor (device, dtype and alignment checked).
bool extract_pointer(const Kernel *k, int i, PyObject *obj, uint64_t *out);
bool tensor_fast_path_enabled();
bool configure_tensor_fast_path(PyObject *tensor_type, const char *libtorch_cpu,
                                PyObject *probe, uint64_t impl_addr, uint64_t data_ptr,
                                std::string &why);
void disable_tensor_fast_path();
// (device_type, device_index, dtype) codes through the fast path; false if unavailable.
bool tensor_codes(PyObject *obj, int32_t out[3]);

// driver_cuda.cpp / driver_ascend.cpp / driver_sim.cpp: launch with validated slots.
bool cuda_launch(Kernel *k, uint32_t grid[3], uint64_t stream, Slot *slots);
void cuda_release(Kernel *k);
bool ascend_launch(Kernel *k, uint32_t grid[3], uint64_t stream, Slot *slots);
void ascend_release(Kernel *k);
bool sim_launch(Kernel *k, uint32_t grid[3], PyObject *const *args, Py_ssize_t nargs);

// capi.cpp: the C ABI's capsule (npu_launcher_capi.h)
PyObject *capi_capsule(PyObject *wrap, const char *libtorch_cpu);

}  // namespace npl
