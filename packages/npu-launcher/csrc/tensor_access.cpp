// Reading a tensor's data pointer, device and dtype without a Python method call and
// without torch headers.
//
// Fast path: a torch.Tensor's C struct (THPVariable) holds its at::Tensor right after
// PyObject_HEAD (torch 2.13; older releases wrapped it in c10::MaybeOwned, a bool then the
// tensor). An at::Tensor is a single TensorImpl pointer, so the address of that slot is an
// AtenTensorHandle, which the extern "C" AOTInductor shim of libtorch_cpu.so accepts:
// aoti_torch_get_data_ptr / _get_device_type / _get_device_index / _get_dtype (a stable ABI
// that AOTInductor-compiled models rely on). The slot offset is never assumed: Python
// calibrates it once on a probe tensor (it looks for the value of tensor._cdata, the
// TensorImpl address, at the candidate offsets and checks what the shim then returns against
// data_ptr()). If anything disagrees the fast path stays off and the slow path is used.
//
// Slow path: tensor.data_ptr(), tensor.device and tensor.dtype through Python, for any
// object (torch versions with another layout, non-torch objects with data_ptr()).
#include <dlfcn.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "launcher.h"

namespace npl {
namespace {

typedef int32_t (*get_ptr_fn)(void *, void **);
typedef int32_t (*get_i32_fn)(void *, int32_t *);

struct FastPath {
  bool enabled = false;
  PyTypeObject *type = nullptr;  // torch._C.TensorBase
  Py_ssize_t slot = 0;           // offset of the at::Tensor (or MaybeOwned payload)
  bool maybe_owned = false;      // a bool precedes the payload: true = borrowed pointer
  get_ptr_fn data_ptr = nullptr;
  get_i32_fn device_type = nullptr, device_index = nullptr, dtype = nullptr;
} fp;

PyObject *s_data_ptr, *s_device, *s_dtype, *s_type, *s_index;

bool intern_names() {
  if (s_data_ptr) return true;
  s_data_ptr = PyUnicode_InternFromString("data_ptr");
  s_device = PyUnicode_InternFromString("device");
  s_dtype = PyUnicode_InternFromString("dtype");
  s_type = PyUnicode_InternFromString("type");
  s_index = PyUnicode_InternFromString("index");
  return s_data_ptr && s_device && s_dtype && s_type && s_index;
}

inline void *handle_of(PyObject *obj) {
  char *base = reinterpret_cast<char *>(obj);
  if (fp.maybe_owned && *reinterpret_cast<bool *>(base + fp.slot - sizeof(void *)))
    return *reinterpret_cast<void **>(base + fp.slot);  // borrowed: pointer to at::Tensor
  return base + fp.slot;
}

const char *arg_name(const Kernel *k, int i) { return k->args[i].name.c_str(); }

// Builds "cpu" / "cuda:1" from tensor.device for messages (error path only).
std::string device_repr(PyObject *obj) {
  std::string out = "?";
  PyObject *dev = PyObject_GetAttr(obj, s_device);
  if (dev) {
    PyObject *s = PyObject_Str(dev);
    if (s) { const char *c = PyUnicode_AsUTF8(s); if (c) out = c; Py_DECREF(s); }
    Py_DECREF(dev);
  }
  PyErr_Clear();
  return out;
}

std::string dtype_repr(PyObject *obj) {
  std::string out = "?";
  PyObject *dt = PyObject_GetAttr(obj, s_dtype);
  if (dt) {
    PyObject *s = PyObject_Str(dt);
    if (s) { const char *c = PyUnicode_AsUTF8(s); if (c) out = c; Py_DECREF(s); }
    Py_DECREF(dt);
  }
  PyErr_Clear();
  return out;
}

bool device_error(const Kernel *k, int i, PyObject *obj) {
  std::string have = device_repr(obj);
  PyErr_Format(err_or(ErrArgument, PyExc_ValueError),
               "npu_launcher: kernel '%s': argument '%s' (#%d): tensor is on %s, "
               "the kernel runs on %s",
               k->name.c_str(), arg_name(k, i), i, have.c_str(), k->device_label.c_str());
  return false;
}

bool dtype_error(const Kernel *k, int i, PyObject *obj) {
  std::string have = dtype_repr(obj);
  const ArgSpec &a = k->args[i];
  std::string want = "?";
  if (a.dtype_obj) {
    PyObject *s = PyObject_Str(a.dtype_obj);
    if (s) { const char *c = PyUnicode_AsUTF8(s); if (c) want = c; Py_DECREF(s); }
    PyErr_Clear();
  }
  PyErr_Format(err_or(ErrArgument, PyExc_ValueError),
               "npu_launcher: kernel '%s': argument '%s' (#%d): tensor dtype is %s, "
               "the kernel was compiled for %s (%s)",
               k->name.c_str(), arg_name(k, i), i, have.c_str(), a.type.c_str(), want.c_str());
  return false;
}

bool check_alignment(const Kernel *k, int i, uint64_t ptr) {
  uint32_t align = k->args[i].align;
  if (align > 1 && ptr % align != 0) {
    char addr[32];  // PyErr_Format has no 64-bit hex conversion
    snprintf(addr, sizeof addr, "0x%" PRIx64, ptr);
    PyErr_Format(err_or(ErrArgument, PyExc_ValueError),
                 "npu_launcher: kernel '%s': argument '%s' (#%d): data pointer %s is not "
                 "%u-byte aligned (the kernel was compiled assuming tt.divisibility=%u)",
                 k->name.c_str(), arg_name(k, i), i, addr, align, align);
    return false;
  }
  return true;
}

bool slow_path(const Kernel *k, int i, PyObject *obj, uint64_t *out) {
  const ArgSpec &a = k->args[i];
  PyObject *meth_args[1] = {obj};
  PyObject *ret = PyObject_VectorcallMethod(s_data_ptr, meth_args,
                                            1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
  if (!ret) {
    if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
      PyErr_Clear();
      PyErr_Format(err_or(ErrArgumentType, PyExc_TypeError),
                   "npu_launcher: kernel '%s': argument '%s' (#%d, %s) expects a tensor, "
                   "a data pointer int or None, got %s",
                   k->name.c_str(), a.name.c_str(), i, a.type.c_str(), Py_TYPE(obj)->tp_name);
    }
    return false;
  }
  unsigned long long v = PyLong_Check(ret) ? PyLong_AsUnsignedLongLong(ret) : (unsigned long long)-1;
  Py_DECREF(ret);
  if (PyErr_Occurred() || v == (unsigned long long)-1) {
    PyErr_Clear();
    PyErr_Format(err_or(ErrArgumentType, PyExc_TypeError),
                 "npu_launcher: kernel '%s': argument '%s' (#%d): data_ptr() did not return "
                 "an address", k->name.c_str(), a.name.c_str(), i);
    return false;
  }
  // device: tensor.device.type (and .index when the kernel is bound to one)
  PyObject *dev = PyObject_GetAttr(obj, s_device);
  if (dev) {
    PyObject *ty = PyObject_GetAttr(dev, s_type);
    bool ok = ty && PyUnicode_Check(ty) &&
              PyUnicode_CompareWithASCIIString(ty, k->device_type_name.c_str()) == 0;
    Py_XDECREF(ty);
    if (ok && k->device_index >= 0) {
      PyObject *idx = PyObject_GetAttr(dev, s_index);
      ok = idx && (idx == Py_None ? k->device_index == 0
                                  : PyLong_AsLong(idx) == k->device_index);
      Py_XDECREF(idx);
    }
    Py_DECREF(dev);
    PyErr_Clear();
    if (!ok) return device_error(k, i, obj);
  } else {
    PyErr_Clear();  // an object without .device: only its address can be checked
  }
  if (a.dtype_obj) {
    PyObject *dt = PyObject_GetAttr(obj, s_dtype);
    if (dt) {
      bool same = dt == a.dtype_obj;
      Py_DECREF(dt);
      if (!same) return dtype_error(k, i, obj);
    } else {
      PyErr_Clear();
    }
  }
  *out = v;
  return check_alignment(k, i, v);
}

}  // namespace

bool tensor_fast_path_enabled() { return fp.enabled; }
void disable_tensor_fast_path() { fp.enabled = false; }

bool configure_tensor_fast_path(PyObject *tensor_type, const char *libtorch_cpu,
                                PyObject *probe, uint64_t impl_addr, uint64_t data_ptr,
                                std::string &why) {
  fp.enabled = false;
  if (!intern_names()) { why = "out of memory"; return false; }
  if (!PyType_Check(tensor_type) || !PyObject_TypeCheck(probe, (PyTypeObject *)tensor_type)) {
    why = "probe is not an instance of the tensor type";
    return false;
  }
  PyTypeObject *tt = (PyTypeObject *)tensor_type;
  void *lib = dlopen(libtorch_cpu, RTLD_LAZY | RTLD_NOLOAD);
  if (!lib) lib = dlopen(libtorch_cpu, RTLD_LAZY);
  if (!lib) { why = std::string("cannot open libtorch_cpu: ") + dlerror(); return false; }
  fp.data_ptr = (get_ptr_fn)dlsym(lib, "aoti_torch_get_data_ptr");
  fp.device_type = (get_i32_fn)dlsym(lib, "aoti_torch_get_device_type");
  fp.device_index = (get_i32_fn)dlsym(lib, "aoti_torch_get_device_index");
  fp.dtype = (get_i32_fn)dlsym(lib, "aoti_torch_get_dtype");
  if (!fp.data_ptr || !fp.device_type || !fp.device_index || !fp.dtype) {
    why = "libtorch_cpu lacks the aoti_torch_get_* shim functions";
    return false;
  }
  // Look for the TensorImpl address in the object, only inside its C struct.
  char *base = reinterpret_cast<char *>(probe);
  Py_ssize_t head = (Py_ssize_t)sizeof(PyObject);
  for (Py_ssize_t off = head; off + (Py_ssize_t)sizeof(void *) <= tt->tp_basicsize &&
                              off <= head + (Py_ssize_t)sizeof(void *);
       off += sizeof(void *)) {
    uint64_t v;
    std::memcpy(&v, base + off, sizeof v);
    if (v != impl_addr) continue;
    fp.type = tt;
    fp.slot = off;
    fp.maybe_owned = off != head;
    if (fp.maybe_owned && *reinterpret_cast<uint8_t *>(base + head) != 0) continue;
    void *got = nullptr;
    int32_t dev = -1;
    if (fp.data_ptr(handle_of(probe), &got) != 0 || (uint64_t)got != data_ptr ||
        fp.device_type(handle_of(probe), &dev) != 0 || dev != 0 /* CPU */) {
      why = "shim results disagree with data_ptr() on the probe tensor";
      return false;
    }
    fp.enabled = true;
    return true;
  }
  why = "TensorImpl address not found in the tensor object (unknown THPVariable layout)";
  return false;
}

bool tensor_codes(PyObject *obj, int32_t out[3]) {
  if (!fp.enabled || !PyObject_TypeCheck(obj, fp.type)) return false;
  void *h = handle_of(obj);
  return fp.device_type(h, &out[0]) == 0 && fp.device_index(h, &out[1]) == 0 &&
         fp.dtype(h, &out[2]) == 0;
}

bool extract_pointer(const Kernel *k, int i, PyObject *obj, uint64_t *out) {
  if (obj == Py_None) { *out = 0; return true; }
  if (PyLong_CheckExact(obj)) {  // a raw device address: only alignment can be checked
    *out = PyLong_AsUnsignedLongLong(obj);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      PyErr_Format(err_or(ErrArgument, PyExc_ValueError),
                   "npu_launcher: kernel '%s': argument '%s' (#%d): address must be a "
                   "non-negative 64-bit int", k->name.c_str(), arg_name(k, i), i);
      return false;
    }
    return check_alignment(k, i, *out);
  }
  if (fp.enabled && PyObject_TypeCheck(obj, fp.type)) {
    void *h = handle_of(obj);
    void *ptr = nullptr;
    int32_t dt = -1, dev = -1, idx = -1;
    if (fp.data_ptr(h, &ptr) != 0 || fp.device_type(h, &dev) != 0) {
      PyErr_Format(err_or(ErrArgument, PyExc_ValueError),
                   "npu_launcher: kernel '%s': argument '%s' (#%d): cannot read the tensor",
                   k->name.c_str(), arg_name(k, i), i);
      return false;
    }
    if (dev != k->device_type) return device_error(k, i, obj);
    if (k->device_index >= 0 && (fp.device_index(h, &idx) != 0 || idx != k->device_index))
      return device_error(k, i, obj);
    const ArgSpec &a = k->args[i];
    if (a.dtype_code >= 0 && (fp.dtype(h, &dt) != 0 || dt != a.dtype_code))
      return dtype_error(k, i, obj);
    *out = (uint64_t)ptr;
    return check_alignment(k, i, *out);
  }
  if (!intern_names()) return false;
  if (PyFloat_Check(obj) || PyUnicode_Check(obj) || PyBool_Check(obj)) {
    const ArgSpec &a = k->args[i];
    PyErr_Format(err_or(ErrArgumentType, PyExc_TypeError),
                 "npu_launcher: kernel '%s': argument '%s' (#%d, %s) expects a tensor, a data "
                 "pointer int or None, got %s",
                 k->name.c_str(), a.name.c_str(), i, a.type.c_str(), Py_TYPE(obj)->tp_name);
    return false;
  }
  return slow_path(k, i, obj, out);
}

}  // namespace npl
