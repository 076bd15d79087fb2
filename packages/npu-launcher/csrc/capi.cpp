// The C ABI (src/npu_launcher/include/npu_launcher_capi.h): load a descriptor file into a
// launch object, launch it with C arguments. A launch turns the C arguments into the Python
// objects the launch object's vectorcall takes (tensors through torch's AOTI tensor handles)
// and calls it, so arguments are validated, and every driver (cuda, ascend, sim) launches,
// exactly as from Python. The sim driver runs Python (npu-sim's interpreter) anyway; a
// Python-free path for cuda/ascend (AOTInductor without Python) would fill the driver's
// slots here directly.
#include <dlfcn.h>

#include <cstdio>
#include <string>
#include <vector>

#include "launcher.h"
#include "npu_launcher_capi.h"

namespace npl {
namespace {

typedef int32_t (*new_handle_fn)(void *, void **);
typedef int32_t (*delete_handle_fn)(void *);

PyObject *g_wrap = nullptr;            // torch._C._aoti.alloc_tensor_by_stealing_from_void_ptr
new_handle_fn g_new_handle = nullptr;  // aoti_torch_new_tensor_handle
delete_handle_fn g_delete_handle = nullptr;  // aoti_torch_delete_tensor_object

void write_err(char *err, size_t n, const std::string &msg) {
  if (err && n) std::snprintf(err, n, "%s", msg.c_str());
}

// the pending Python error as "Type: message" into err; clears it
void python_err(char *err, size_t n) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  std::string msg = "npu_launcher: unknown error";
  if (value) {
    PyObject *s = PyObject_Str(value);
    const char *c = s ? PyUnicode_AsUTF8(s) : nullptr;
    if (c) msg = std::string(Py_TYPE(value)->tp_name) + ": " + c;
    Py_XDECREF(s);
  }
  PyErr_Clear();
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  write_err(err, n, msg);
}

PyObject *scalar(const Kernel *k, const ArgSpec &a, const void *p) {
  switch (a.kind) {
    case K_I1: return PyBool_FromLong(*(const bool *)p);
    case K_I8: return PyLong_FromLong(*(const int8_t *)p);
    case K_I16: return PyLong_FromLong(*(const int16_t *)p);
    case K_I32: return PyLong_FromLong(*(const int32_t *)p);
    case K_I64: return PyLong_FromLongLong(*(const int64_t *)p);
    case K_U8: return PyLong_FromUnsignedLong(*(const uint8_t *)p);
    case K_U16: return PyLong_FromUnsignedLong(*(const uint16_t *)p);
    case K_U32: return PyLong_FromUnsignedLong(*(const uint32_t *)p);
    case K_U64: return PyLong_FromUnsignedLongLong(*(const uint64_t *)p);
    case K_FP32: return PyFloat_FromDouble(*(const float *)p);
    case K_FP64: return PyFloat_FromDouble(*(const double *)p);
    default:
      PyErr_Format(ErrArgumentType, "kernel '%s': argument %s of type %s cannot be passed through the C ABI",
                   k->name.c_str(), a.name.c_str(), a.type.c_str());
      return nullptr;
  }
}

// a new Python tensor sharing the handle's TensorImpl (the caller keeps its handle)
PyObject *tensor(const void *slot) {
  void *h = *(void *const *)slot;
  if (!h) Py_RETURN_NONE;
  void *fresh = nullptr;
  if (g_new_handle(h, &fresh) != 0 || !fresh) {
    PyErr_SetString(ErrArgument, "npu_launcher: aoti_torch_new_tensor_handle failed");
    return nullptr;
  }
  PyObject *addr = PyCapsule_New(fresh, nullptr, nullptr);  // what pybind11 takes as void*
  if (!addr) { g_delete_handle(fresh); return nullptr; }
  PyObject *t = PyObject_CallOneArg(g_wrap, addr);  // steals fresh
  Py_DECREF(addr);
  return t;
}

void *capi_load(const char *path, int device, char *err, size_t n) {
  PyGILState_STATE g = PyGILState_Ensure();
  void *out = nullptr;
  PyObject *mod = PyImport_ImportModule("npu_launcher.capi");
  PyObject *r = mod ? PyObject_CallMethod(mod, "bind_file", "si", path, device) : nullptr;
  Py_XDECREF(mod);
  if (!r) {
    python_err(err, n);
  } else if (!PyObject_TypeCheck(r, launch_object_type())) {
    write_err(err, n, "npu_launcher: bind_file did not return a launch object");
    Py_DECREF(r);
  } else {
    out = r;
  }
  PyGILState_Release(g);
  return out;
}

int capi_num_args(void *h) { return (int)((LaunchObject *)h)->kernel->args.size(); }

int capi_launch(void *h, uint32_t gx, uint32_t gy, uint32_t gz, void *stream, void **args, int nargs,
                char *err, size_t n) {
  LaunchObject *lo = (LaunchObject *)h;
  Kernel *k = lo->kernel;
  if (nargs != (int)k->args.size()) {
    write_err(err, n, "npu_launcher: kernel '" + k->name + "' takes " + std::to_string(k->args.size()) +
                          " arguments, the C call passed " + std::to_string(nargs));
    return 1;
  }
  PyGILState_STATE g = PyGILState_Ensure();
  Py_ssize_t count = k->call_count();
  std::vector<PyObject *> call(4 + count, nullptr);
  bool ok = true;
  call[0] = PyLong_FromUnsignedLong(gx);
  call[1] = PyLong_FromUnsignedLong(gy);
  call[2] = PyLong_FromUnsignedLong(gz);
  call[3] = stream ? PyLong_FromVoidPtr(stream) : Py_NewRef(Py_None);
  for (int i = 0; i < 4; ++i) ok = ok && call[i];
  for (Py_ssize_t p = 0; ok && p < count; ++p) {
    int idx = k->call_plan.empty() ? (int)p : k->call_plan[p];
    PyObject *obj;
    if (idx >= 0) {
      const ArgSpec &a = k->args[idx];
      obj = a.kind == K_PTR ? tensor(args[idx]) : scalar(k, a, args[idx]);
    } else {  // specialized into the binary: pass the value it was compiled with
      PyObject *v = k->specialized[-1 - idx].value;
      obj = Py_NewRef(v ? v : Py_None);
    }
    call[4 + p] = obj;
    ok = obj != nullptr;
  }
  int rc = 1;
  if (ok) {
    PyObject *r = PyObject_Vectorcall((PyObject *)lo, call.data(), call.size(), nullptr);
    if (r) { Py_DECREF(r); rc = 0; }
  }
  if (rc) python_err(err, n);
  for (PyObject *o : call) Py_XDECREF(o);
  PyGILState_Release(g);
  return rc;
}

void capi_release(void *h) {
  if (!h) return;
  PyGILState_STATE g = PyGILState_Ensure();
  Py_DECREF((PyObject *)h);
  PyGILState_Release(g);
}

NplCApi g_api = {NPL_CAPI_VERSION, capi_load, capi_num_args, capi_launch, capi_release};

}  // namespace

// The capsule npu_launcher.capi exports; wrap: torch's stealing tensor constructor,
// libtorch_cpu: the library holding the AOTI shim.
PyObject *capi_capsule(PyObject *wrap, const char *libtorch_cpu) {
  void *lib = dlopen(libtorch_cpu, RTLD_LAZY | RTLD_NOLOAD);
  if (!lib) lib = dlopen(libtorch_cpu, RTLD_LAZY);
  if (!lib) {
    PyErr_Format(ErrDriver, "npu_launcher: cannot open %s for the C ABI", libtorch_cpu);
    return nullptr;
  }
  g_new_handle = (new_handle_fn)dlsym(lib, "aoti_torch_new_tensor_handle");
  g_delete_handle = (delete_handle_fn)dlsym(lib, "aoti_torch_delete_tensor_object");
  if (!g_new_handle || !g_delete_handle) {
    PyErr_SetString(ErrDriver, "npu_launcher: libtorch_cpu lacks aoti_torch_new_tensor_handle");
    return nullptr;
  }
  Py_XSETREF(g_wrap, Py_NewRef(wrap));
  return PyCapsule_New(&g_api, NPL_CAPI_CAPSULE, nullptr);
}

}  // namespace npl
