// Exception classes live in Python (npu_launcher.errors) so users catch them by name;
// set_error_types() hands them to C++ at import. Until then builtin types are used.
#include <cstdarg>
#include <cstdio>

#include "launcher.h"

namespace npl {

PyObject *ErrArgument = nullptr;
PyObject *ErrArgumentType = nullptr;
PyObject *ErrLaunch = nullptr;
PyObject *ErrDriver = nullptr;
PyObject *ErrDescriptor = nullptr;

PyObject *err_or(PyObject *e, PyObject *fallback) { return e ? e : fallback; }

// the shared drivers' errors (kernel.h) as the Python exception of their kind
bool driver_fail(ErrKind kind, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  PyObject *type = PyExc_RuntimeError;
  switch (kind) {
    case E_ARGUMENT: type = err_or(ErrArgument, PyExc_ValueError); break;
    case E_ARGUMENT_TYPE: type = err_or(ErrArgumentType, PyExc_TypeError); break;
    case E_LAUNCH: type = err_or(ErrLaunch, PyExc_RuntimeError); break;
    case E_DRIVER: type = err_or(ErrDriver, PyExc_RuntimeError); break;
    case E_DESCRIPTOR: type = err_or(ErrDescriptor, PyExc_ValueError); break;
  }
  PyErr_SetString(type, msg);
  return false;
}

}  // namespace npl
