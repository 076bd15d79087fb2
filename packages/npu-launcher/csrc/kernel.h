// The launcher's kernel model, shared by the Python extension (_native) and the Python-free
// C library (libnpu_launcher_direct.so): argument kinds, the bound kernel and the drivers'
// handles. No Python, torch, CUDA or CANN header: PyObject is only named (the sim driver and
// the Python launch path keep Python objects in a Kernel; the direct library never does).
#pragma once

#include <sys/types.h>  // ssize_t: what Py_ssize_t is on POSIX

#include <cstdint>
#include <string>
#include <vector>

typedef struct _object PyObject;  // as Python.h declares it

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
  ssize_t position;   // among the call's kernel arguments
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
  ssize_t call_count() const { return (ssize_t)(args.size() + specialized.size()); }
  DriverKind driver;
  int device_type;   // c10::DeviceType code tensors must have
  int device_index;  // -1: any index
  std::string device_label;  // "cuda:0", for messages
  std::string device_type_name;  // "cuda", "npu": what tensor.device.type must say
  CudaBinding cuda;
  AscendBinding ascend;
  SimBinding sim;
};

constexpr int kMaxArgs = 256;

// Errors of the code both libraries share (the cuda and ascend drivers): in the extension a
// Python exception of the class for `kind` (errors.cpp), in the direct library the calling
// thread's last error (direct.cpp). Returns false, for `return driver_fail(...)`.
enum ErrKind : int { E_ARGUMENT = 0, E_ARGUMENT_TYPE, E_LAUNCH, E_DRIVER, E_DESCRIPTOR };
bool driver_fail(ErrKind kind, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

}  // namespace npl
