// The pre-bound launch object. Called as launcher(grid_x, grid_y, grid_z, stream, *args)
// through vectorcall: no argument tuple, no PyArg_ParseTuple, no context lookup. Every
// argument is validated against the descriptor (count, type, device, dtype, alignment,
// integer range) and a bad one raises an error naming the kernel and the argument.
//
// nanobind's own class_ instances have no per-instance vectorcall slot, so this one type is
// a plain heap type (PyType_FromSpec with __vectorcalloffset__) living in the nanobind module.
#include "launcher.h"  // Python.h first
#include "drivers.h"

#include <structmember.h>

#include <climits>
#include <cmath>
#include <cstring>

namespace npl {
namespace {

const char *kind_name(int kind) {
  static const char *names[K_COUNT] = {"pointer", "i1", "i8", "i16", "i32", "i64", "u8",
                                       "u16", "u32", "u64", "fp16", "bf16", "fp32", "fp64"};
  return kind >= 0 && kind < K_COUNT ? names[kind] : "?";
}

bool type_error(const Kernel *k, int i, PyObject *obj) {
  const ArgSpec &a = k->args[i];
  PyErr_Format(err_or(ErrArgumentType, PyExc_TypeError),
               "npu_launcher: kernel '%s': argument '%s' (#%d, %s) expects %s, got %s",
               k->name.c_str(), a.name.c_str(), i, a.type.c_str(),
               a.kind >= K_FP16 ? "a float" : "an int", Py_TYPE(obj)->tp_name);
  return false;
}

bool range_error(const Kernel *k, int i, PyObject *obj) {
  const ArgSpec &a = k->args[i];
  PyErr_Clear();
  PyObject *r = PyObject_Repr(obj);
  const char *s = r ? PyUnicode_AsUTF8(r) : "?";
  PyErr_Format(err_or(ErrArgument, PyExc_ValueError),
               "npu_launcher: kernel '%s': argument '%s' (#%d): %s is out of range for %s",
               k->name.c_str(), a.name.c_str(), i, s ? s : "?", kind_name(a.kind));
  Py_XDECREF(r);
  return false;
}

bool convert_int(const Kernel *k, int i, PyObject *obj, Slot *slot) {
  const ArgSpec &a = k->args[i];
  PyObject *owned = nullptr;
  if (!PyLong_Check(obj)) {
    if (PyFloat_Check(obj) || !PyIndex_Check(obj)) return type_error(k, i, obj);
    owned = PyNumber_Index(obj);  // numpy integers and other __index__ objects
    if (!owned) return false;
    obj = owned;
  }
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
  unsigned long long uv = 0;
  bool ok = !overflow && !PyErr_Occurred();
  if (a.kind == K_U64 && overflow > 0) {  // above INT64_MAX but maybe a valid u64
    uv = PyLong_AsUnsignedLongLong(obj);
    ok = !PyErr_Occurred();
    v = 0;
  } else {
    uv = (unsigned long long)v;
  }
  if (ok) switch (a.kind) {
      case K_I1: ok = v == 0 || v == 1; slot->u64 = 0; slot->i8 = (int8_t)v; break;
      case K_I8: ok = v >= INT8_MIN && v <= INT8_MAX; slot->u64 = 0; slot->i8 = (int8_t)v; break;
      case K_I16: ok = v >= INT16_MIN && v <= INT16_MAX; slot->u64 = 0; slot->i16 = (int16_t)v; break;
      case K_I32: ok = v >= INT32_MIN && v <= INT32_MAX; slot->u64 = 0; slot->i32 = (int32_t)v; break;
      case K_I64: slot->i64 = v; break;
      case K_U8: ok = v >= 0 && v <= UINT8_MAX; slot->u64 = 0; slot->u8 = (uint8_t)v; break;
      case K_U16: ok = v >= 0 && v <= UINT16_MAX; slot->u64 = 0; slot->u16 = (uint16_t)v; break;
      case K_U32: ok = v >= 0 && v <= (long long)UINT32_MAX; slot->u64 = 0; slot->u32 = (uint32_t)v; break;
      case K_U64: ok = overflow > 0 || v >= 0; slot->u64 = uv; break;
      default: ok = false;
    }
  if (ok && k->driver == D_ASCEND && a.kind == K_I1) slot->i32 = (int32_t)v;  // int32_t there
  if (!ok) {
    range_error(k, i, obj);
    Py_XDECREF(owned);
    return false;
  }
  Py_XDECREF(owned);
  if (a.align > 1 && (a.kind == K_U64 ? uv % a.align : (unsigned long long)(v % (long long)a.align)) != 0) {
    PyErr_Format(err_or(ErrArgument, PyExc_ValueError),
                 "npu_launcher: kernel '%s': argument '%s' (#%d): %lld is not a multiple of %u "
                 "(the kernel was compiled assuming tt.divisibility=%u)",
                 k->name.c_str(), a.name.c_str(), i, v, a.align, a.align);
    return false;
  }
  return true;
}

bool convert_float(const Kernel *k, int i, PyObject *obj, Slot *slot) {
  const ArgSpec &a = k->args[i];
  if (!PyFloat_Check(obj) && !PyLong_Check(obj) &&
      !(Py_TYPE(obj)->tp_as_number && Py_TYPE(obj)->tp_as_number->nb_float))
    return type_error(k, i, obj);
  double d = PyFloat_AsDouble(obj);
  if (d == -1.0 && PyErr_Occurred()) return range_error(k, i, obj);
  slot->u64 = 0;
  if (a.kind == K_FP64) { slot->f64 = d; return true; }
  float f = (float)d;
  if (std::isfinite(d) && !std::isfinite(f) && a.kind != K_FP16) return range_error(k, i, obj);
  if (a.kind == K_FP32 || k->driver == D_ASCEND) { slot->f32 = f; return true; }  // Ascend: float
  if (a.kind == K_BF16) {  // same truncation as Triton's own launcher
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    slot->u16 = (uint16_t)(bits >> 16);
    return true;
  }
#if PY_VERSION_HEX >= 0x030B0000
  if (PyFloat_Pack2(d, (char *)&slot->u16, 1) != 0) return range_error(k, i, obj);
#else
  if (_PyFloat_Pack2(d, (unsigned char *)&slot->u16, 1) != 0) return range_error(k, i, obj);
#endif
  return true;
}

}  // namespace

// Shared with grid_slot.cpp (launcher.h).
bool read_grid(const Kernel *k, PyObject *obj, const char *which, uint32_t *out) {
  if (!PyLong_Check(obj)) {
    PyErr_Format(err_or(ErrArgumentType, PyExc_TypeError),
                 "npu_launcher: kernel '%s': %s must be an int, got %s", k->name.c_str(),
                 which, Py_TYPE(obj)->tp_name);
    return false;
  }
  long long v = PyLong_AsLongLong(obj);
  if ((v == -1 && PyErr_Occurred()) || v < 0 || v > INT32_MAX) {
    PyErr_Clear();
    PyErr_Format(err_or(ErrArgument, PyExc_ValueError),
                 "npu_launcher: kernel '%s': %s must be in [0, 2**31), got %S", k->name.c_str(),
                 which, obj);
    return false;
  }
  *out = (uint32_t)v;
  return true;
}

bool no_keywords(const Kernel *k, PyObject *kwnames) {
  if (kwnames && PyTuple_GET_SIZE(kwnames)) {
    PyErr_Format(err_or(ErrArgumentType, PyExc_TypeError),
                 "npu_launcher: kernel '%s': the launcher takes no keyword arguments",
                 k->name.c_str());
    return false;
  }
  return true;
}

bool read_stream(const Kernel *k, PyObject *obj, uint64_t *out) {
  *out = 0;
  if (obj == Py_None) return true;
  if (!PyLong_Check(obj)) {
    PyErr_Format(err_or(ErrArgumentType, PyExc_TypeError),
                 "npu_launcher: kernel '%s': stream must be an int handle or None, got %s",
                 k->name.c_str(), Py_TYPE(obj)->tp_name);
    return false;
  }
  *out = PyLong_AsUnsignedLongLong(obj);
  return !PyErr_Occurred();
}

bool count_error(const Kernel *k, const char *before, Py_ssize_t extra, Py_ssize_t got) {
  std::string names;
  Py_ssize_t n = k->call_count();
  for (Py_ssize_t j = 0; j < n; ++j) {
    names += j ? ", " : "";
    int p = k->call_plan.empty() ? (int)j : k->call_plan[j];
    if (p >= 0) {
      names += k->args[p].name;
      continue;
    }
    const SpecializedArg &s = k->specialized[-1 - p];
    names += s.name + " (specialized";
    if (s.value) {
      PyObject *r = PyObject_Repr(s.value);
      const char *t = r ? PyUnicode_AsUTF8(r) : nullptr;
      if (t) names += std::string(" to ") + t;
      Py_XDECREF(r);
      PyErr_Clear();
    }
    names += ")";
  }
  std::string ignored = extra ? " then " + std::to_string(extra) + " ignored" : "";
  PyErr_Format(err_or(ErrArgumentType, PyExc_TypeError),
               "npu_launcher: kernel '%s' takes %s and %zd kernel arguments (%s)%s; got %zd "
               "arguments in all", k->name.c_str(), before, n, names.c_str(), ignored.c_str(), got);
  return false;
}

namespace {

// Triton's JIT would compile another specialization for another value; a static launch has
// only this binary, so a different value is an error, never a silently wrong result.
bool specialized_matches(PyObject *want, PyObject *got) {
  if (want == Py_None || got == Py_None) return false;  // identity was checked first
  if (PyBool_Check(want) != PyBool_Check(got)) return false;  // Triton types bools as i1
  if (PyFloat_Check(got) != PyFloat_Check(want)) return false;  // and floats as fp32
  int r = PyObject_RichCompareBool(got, want, Py_EQ);
  if (r < 0) PyErr_Clear();
  return r == 1;
}

// The binary's arguments out of the call's (specialized ones checked and dropped).
bool gather_runtime(const Kernel *k, PyObject *const *kargs, PyObject **out) {
  Py_ssize_t n = k->call_count();
  for (Py_ssize_t j = 0; j < n; ++j) {
    int p = k->call_plan[j];
    if (p >= 0) {
      out[p] = kargs[j];
      continue;
    }
    const SpecializedArg &s = k->specialized[-1 - p];
    PyObject *v = kargs[j];
    if (!s.check || v == s.value || specialized_matches(s.value, v)) continue;
    PyErr_Format(err_or(ErrArgument, PyExc_ValueError),
                 "npu_launcher: kernel '%s': argument '%s' (#%zd) was specialized to %R when the "
                 "kernel was compiled (Triton makes an int equal to 1, or None, a constant); got "
                 "%R, which this binary cannot run: compile the kernel for that value",
                 k->name.c_str(), s.name.c_str(), j, s.value, v);
    return false;
  }
  return true;
}

}  // namespace

// Validates the kernel arguments and launches: the part every call path shares.
PyObject *launch_args(Kernel *k, uint32_t grid[3], uint64_t stream, PyObject *const *call) {
  Py_ssize_t n = (Py_ssize_t)k->args.size();
  PyObject *const *kargs = call;
  PyObject *gathered[kMaxArgs];
  if (!k->call_plan.empty()) {  // decided at bind: kernels without specialized args skip this
    if (!gather_runtime(k, call, gathered)) return nullptr;
    kargs = gathered;
  }
  Slot slots[kMaxArgs];
  for (Py_ssize_t i = 0; i < n; ++i) {
    const ArgSpec &a = k->args[i];
    bool ok;
    if (a.kind == K_PTR) {
      uint64_t p;
      ok = extract_pointer(k, (int)i, kargs[i], &p);
      slots[i].u64 = p;
    } else if (a.kind >= K_FP16) {
      ok = convert_float(k, (int)i, kargs[i], &slots[i]);
    } else {
      ok = convert_int(k, (int)i, kargs[i], &slots[i]);
    }
    if (!ok) return nullptr;
  }
  if ((uint64_t)grid[0] * grid[1] * grid[2] == 0) Py_RETURN_NONE;  // nothing to run
  bool ok = false;
  switch (k->driver) {
    case D_CUDA: ok = cuda_launch(k, grid, stream, slots); break;
    case D_ASCEND: ok = ascend_launch(k, grid, stream, slots); break;
    case D_SIM: ok = sim_launch(k, grid, call, k->call_count()); break;  // the Python kernel takes them all
  }
  if (!ok) return nullptr;
  Py_RETURN_NONE;
}

namespace {

PyObject *launch_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames) {
  Kernel *k = reinterpret_cast<LaunchObject *>(self)->kernel;
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (!no_keywords(k, kwnames)) return nullptr;
  if (nargs != k->call_count() + 4) {
    count_error(k, "grid_x, grid_y, grid_z, stream", 0, nargs);
    return nullptr;
  }
  uint32_t grid[3];
  if (!read_grid(k, args[0], "grid_x", &grid[0]) || !read_grid(k, args[1], "grid_y", &grid[1]) ||
      !read_grid(k, args[2], "grid_z", &grid[2]))
    return nullptr;
  uint64_t stream;
  if (!read_stream(k, args[3], &stream)) return nullptr;
  return launch_args(k, grid, stream, args + 4);
}

PyMethodDef methods[] = {
    {"at", (PyCFunction)(void (*)(void))launch_at, METH_FASTCALL,
     "at(grid_x, grid_y, grid_z, ignore_trailing=0) -> slot(stream, *kernel_args): this kernel "
     "at a fixed grid; the slot drops ignore_trailing arguments after the kernel's"},
    {nullptr, nullptr, 0, nullptr}};

void launch_dealloc(PyObject *self) {
  LaunchObject *lo = reinterpret_cast<LaunchObject *>(self);
  Kernel *k = lo->kernel;
  if (k) {
    switch (k->driver) {
      case D_CUDA: cuda_release(k); break;
      case D_ASCEND: ascend_release(k); break;
      case D_SIM: sim_release(k); break;
    }
    for (ArgSpec &a : k->args) Py_CLEAR(a.dtype_obj);
    for (SpecializedArg &sa : k->specialized) Py_CLEAR(sa.value);
    delete k;
    lo->kernel = nullptr;
  }
  PyTypeObject *tp = Py_TYPE(self);
  tp->tp_free(self);
  Py_DECREF(tp);
}

PyObject *launch_repr(PyObject *self) {
  Kernel *k = reinterpret_cast<LaunchObject *>(self)->kernel;
  static const char *drivers[] = {"cuda", "ascend", "sim"};
  std::string sig;
  for (const ArgSpec &a : k->args) sig += (sig.empty() ? "" : ", ") + a.name + ": " + a.type;
  return PyUnicode_FromFormat("<npu_launcher launch object '%s' on %s via %s (%s)>",
                              k->name.c_str(), k->device_label.c_str(), drivers[k->driver],
                              sig.c_str());
}

PyObject *get_name(PyObject *self, void *) {
  return PyUnicode_FromString(reinterpret_cast<LaunchObject *>(self)->kernel->name.c_str());
}

PyObject *get_driver(PyObject *self, void *) {
  static const char *drivers[] = {"cuda", "ascend", "sim"};
  return PyUnicode_FromString(drivers[reinterpret_cast<LaunchObject *>(self)->kernel->driver]);
}

PyObject *get_arg_names(PyObject *self, void *) {
  Kernel *k = reinterpret_cast<LaunchObject *>(self)->kernel;
  PyObject *t = PyTuple_New((Py_ssize_t)k->args.size());
  if (!t) return nullptr;
  for (size_t i = 0; i < k->args.size(); ++i)
    PyTuple_SET_ITEM(t, i, PyUnicode_FromString(k->args[i].name.c_str()));
  return t;
}

PyObject *get_specialized(PyObject *self, void *) {
  Kernel *k = reinterpret_cast<LaunchObject *>(self)->kernel;
  PyObject *t = PyTuple_New((Py_ssize_t)k->specialized.size());
  if (!t) return nullptr;
  for (size_t i = 0; i < k->specialized.size(); ++i) {
    const SpecializedArg &s = k->specialized[i];
    PyObject *item = Py_BuildValue("(nsO)", s.position, s.name.c_str(), s.value ? s.value : Py_None);
    if (!item) { Py_DECREF(t); return nullptr; }
    PyTuple_SET_ITEM(t, i, item);
  }
  return t;
}

PyObject *get_function(PyObject *self, void *) {
  Kernel *k = reinterpret_cast<LaunchObject *>(self)->kernel;
  void *h = k->driver == D_CUDA ? k->cuda.function : k->driver == D_ASCEND ? k->ascend.stub : nullptr;
  return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)h);
}

PyGetSetDef getset[] = {
    {"name", get_name, nullptr, "kernel entry name", nullptr},
    {"driver", get_driver, nullptr, "cuda, ascend or sim", nullptr},
    {"arg_names", get_arg_names, nullptr, "the arguments the binary takes", nullptr},
    {"specialized", get_specialized, nullptr,
     "(position, name, value) of call arguments Triton specialized: dropped, value checked", nullptr},
    {"function", get_function, nullptr, "driver function handle (0 for sim)", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMemberDef members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, (Py_ssize_t)offsetof(LaunchObject, vectorcall),
     READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyType_Slot slots[] = {
    {Py_tp_dealloc, (void *)launch_dealloc},
    {Py_tp_repr, (void *)launch_repr},
    {Py_tp_call, (void *)PyVectorcall_Call},
    {Py_tp_getset, (void *)getset},
    {Py_tp_members, (void *)members},
    {Py_tp_methods, (void *)methods},
    {Py_tp_doc, (void *)"launcher(grid_x, grid_y, grid_z, stream, *kernel_args): one launch."},
    {0, nullptr}};

PyType_Spec spec = {"npu_launcher._native.LaunchObject", sizeof(LaunchObject), 0,
                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL, slots};

PyTypeObject *the_type = nullptr;

}  // namespace

PyTypeObject *launch_object_type() {
  if (!the_type) the_type = (PyTypeObject *)PyType_FromSpec(&spec);
  return the_type;
}

PyObject *make_launch_object(Kernel *kernel) {
  PyTypeObject *tp = launch_object_type();
  if (!tp) { delete kernel; return nullptr; }
  LaunchObject *lo = PyObject_New(LaunchObject, tp);
  if (!lo) { delete kernel; return nullptr; }
  lo->vectorcall = launch_vectorcall;
  lo->kernel = kernel;
  return reinterpret_cast<PyObject *>(lo);
}

}  // namespace npl
