// npu_launcher._native: bind-time functions (nanobind) that build pre-bound launch objects
// for the cuda, ascend and sim drivers, the tensor fast-path calibration, and the symbol
// tables the fidelity tests read. The per-call path is launch_object.cpp.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "launcher.h"  // Python.h first
#include "drivers.h"

namespace nb = nanobind;
using namespace npl;

namespace {

// Builds the driver-independent part of a Kernel from Python's bind() arguments:
// args = [(kind, align, dtype_code, dtype_obj | None, name, type), ...],
// specialized = [(call position, name, value, checked, exact), ...]
Kernel *make_kernel(const std::string &name, nb::list args, nb::list specialized, int driver,
                    int device_type, int device_index, const std::string &device_label,
                    const std::string &device_type_name) {
  if (nb::len(args) + nb::len(specialized) > (size_t)kMaxArgs)
    throw nb::value_error(("npu_launcher: kernel '" + name + "' has more than " +
                           std::to_string(kMaxArgs) + " arguments").c_str());
  Kernel *k = new Kernel();
  k->name = name;
  k->driver = (DriverKind)driver;
  k->device_type = device_type;
  k->device_index = device_index;
  k->device_label = device_label;
  k->device_type_name = device_type_name;
  for (nb::handle item : args) {
    nb::tuple t = nb::cast<nb::tuple>(item);
    ArgSpec a;
    int kind = nb::cast<int>(t[0]);
    if (kind < 0 || kind >= K_COUNT) {
      delete k;
      throw nb::value_error("npu_launcher: unknown argument kind");
    }
    a.kind = (ArgKind)kind;
    a.align = nb::cast<uint32_t>(t[1]);
    a.dtype_code = nb::cast<int32_t>(t[2]);
    a.dtype_obj = t[3].is_none() ? nullptr : t[3].inc_ref().ptr();
    a.name = nb::cast<std::string>(t[4]);
    a.type = nb::cast<std::string>(t[5]);
    k->args.push_back(std::move(a));
  }
  if (nb::len(specialized)) {
    // the call plan: which call position feeds which binary argument, decided once here
    size_t n = k->args.size() + nb::len(specialized);
    k->call_plan.assign(n, 0);
    std::vector<bool> taken(n, false);
    for (nb::handle item : specialized) {
      nb::tuple t = nb::cast<nb::tuple>(item);
      SpecializedArg s;
      s.position = nb::cast<Py_ssize_t>(t[0]);
      s.name = nb::cast<std::string>(t[1]);
      s.check = nb::cast<bool>(t[3]);
      s.value = nb::cast<bool>(t[4]) ? t[2].inc_ref().ptr() : nullptr;
      if (!s.value) s.check = false;
      bool bad = s.position < 0 || (size_t)s.position >= n || taken[s.position];
      if (!bad) {
        taken[s.position] = true;
        k->call_plan[s.position] = -1 - (int)k->specialized.size();
      }
      k->specialized.push_back(std::move(s));
      if (bad) {
        for (SpecializedArg &sa : k->specialized) Py_CLEAR(sa.value);
        for (ArgSpec &a : k->args) Py_CLEAR(a.dtype_obj);
        delete k;
        throw nb::value_error(("npu_launcher: kernel '" + name + "': specialized argument "
                               "positions must be distinct and below the call's argument count").c_str());
      }
    }
    int next = 0;
    for (size_t j = 0; j < n; ++j)
      if (!taken[j]) k->call_plan[j] = next++;
  }
  return k;
}

// Wraps the kernel in its launch object first, so a failing driver bind releases it.
nb::object wrap(Kernel *k) {
  PyObject *obj = make_launch_object(k);
  if (!obj) throw nb::python_error();
  return nb::steal(obj);
}

}  // namespace

NB_MODULE(_native, m) {
  m.doc() = "npu_launcher native launcher (nanobind); see npu_launcher.launcher";

  m.def("set_error_types", [](nb::handle argument, nb::handle argument_type, nb::handle launch,
                              nb::handle driver, nb::handle descriptor) {
    ErrArgument = argument.inc_ref().ptr();
    ErrArgumentType = argument_type.inc_ref().ptr();
    ErrLaunch = launch.inc_ref().ptr();
    ErrDriver = driver.inc_ref().ptr();
    ErrDescriptor = descriptor.inc_ref().ptr();
  });

  m.def("configure_tensor_fast_path",
        [](nb::handle tensor_type, const std::string &libtorch_cpu, nb::handle probe,
           uint64_t impl_addr, uint64_t data_ptr) {
          std::string why;
          bool ok = configure_tensor_fast_path(tensor_type.ptr(), libtorch_cpu.c_str(),
                                               probe.ptr(), impl_addr, data_ptr, why);
          return std::make_pair(ok, why);
        });
  m.def("capi_capsule", [](nb::handle wrap, const std::string &libtorch_cpu) -> nb::object {
    PyObject *c = capi_capsule(wrap.ptr(), libtorch_cpu.c_str());
    if (!c) throw nb::python_error();
    return nb::steal(c);
  }, "the C ABI's function table as a capsule (npu_launcher.capi)");
  m.def("disable_tensor_fast_path", &disable_tensor_fast_path);
  m.def("tensor_fast_path_enabled", &tensor_fast_path_enabled);
  m.def("tensor_codes", [](nb::handle t) -> nb::object {
    int32_t c[3];
    if (!tensor_codes(t.ptr(), c)) return nb::none();
    return nb::make_tuple(c[0], c[1], c[2]);
  });

  m.def("bind_cuda", [](const std::string &name, nb::list args, int device_type,
                        int device_index, const std::string &device_label,
                        const std::string &device_type_name, nb::bytes cubin, int num_warps,
                        int shared, int arch, int trailing_null_params, nb::list specialized) {
    nb::object obj = wrap(make_kernel(name, args, specialized, D_CUDA, device_type, device_index,
                                      device_label, device_type_name));
    Kernel *k = reinterpret_cast<LaunchObject *>(obj.ptr())->kernel;
    int n_regs = 0, n_spills = 0;
    if (!cuda_bind(k, cubin.c_str(), cubin.size(), num_warps, shared, arch, device_index,
                   trailing_null_params, &n_regs, &n_spills))
      throw nb::python_error();
    return nb::make_tuple(obj, n_regs, n_spills);
  });

  m.def("bind_ascend", [](const std::string &name, nb::list args, int device_type,
                          int device_index, const std::string &device_label,
                          const std::string &device_type_name, nb::bytes binary,
                          const std::string &mix_mode, bool ffts, bool simt_only,
                          const std::string &soc, nb::list specialized) {
    nb::object obj = wrap(make_kernel(name, args, specialized, D_ASCEND, device_type, device_index,
                                      device_label, device_type_name));
    Kernel *k = reinterpret_cast<LaunchObject *>(obj.ptr())->kernel;
    k->ascend.ffts = ffts;
    k->ascend.simt_only = simt_only;
    if (!ascend_bind(k, binary.c_str(), binary.size(), mix_mode, soc, device_index))
      throw nb::python_error();
    return obj;
  });

  m.def("bind_sim", [](const std::string &name, nb::list args, int device_type,
                       int device_index, const std::string &device_label,
                       const std::string &device_type_name, nb::handle entry, nb::handle fn,
                       nb::handle constexprs, nb::list specialized) {
    nb::object obj = wrap(make_kernel(name, args, specialized, D_SIM, device_type, device_index,
                                      device_label, device_type_name));
    Kernel *k = reinterpret_cast<LaunchObject *>(obj.ptr())->kernel;
    if (!sim_bind(k, entry.ptr(), fn.ptr(), constexprs.ptr())) throw nb::python_error();
    return obj;
  });

  m.def("driver_status", [](const std::string &which) {
    bool ok = which == "cuda" ? cuda_load_api() : which == "ascend" ? ascend_load_api() : false;
    std::string why;
    if (!ok) {
      if (PyErr_Occurred()) {
        nb::python_error e;
        why = e.what();
      } else {
        why = "unknown driver " + which;
      }
    }
    return std::make_pair(ok, why);
  });
  m.def("cuda_capability", [](int device) {
    int major = 0, minor = 0;
    if (!cuda_capability(device, &major, &minor)) throw nb::python_error();
    return std::make_pair(major, minor);
  });
  m.def("cuda_symbols", &cuda_symbols, "(name, prototype) of each CUDA driver function resolved");
  m.def("ascend_symbols", &ascend_symbols, "(name, prototype) of each CANN function resolved");
  m.def("ascend_layout", [](const std::vector<int> &kinds, bool ffts, bool simt_only) {
    std::vector<uint32_t> offsets;
    uint32_t grid_offset = 0, size = 0;
    int bad = -1;
    if (!ascend_layout(kinds, ffts, simt_only, offsets, grid_offset, size, bad))
      throw nb::value_error(("argument kind at index " + std::to_string(bad) +
                             " has no Ascend C type").c_str());
    return nb::make_tuple(offsets, grid_offset, size);
  });

  PyTypeObject *tp = launch_object_type();
  if (!tp) throw nb::python_error();
  m.attr("LaunchObject") = nb::borrow((PyObject *)tp);
  m.attr("MAX_ARGS") = kMaxArgs;
  m.attr("ARG_KINDS") = nb::make_tuple("*", "i1", "i8", "i16", "i32", "i64", "u8", "u16",
                                       "u32", "u64", "fp16", "bf16", "fp32", "fp64");
}
