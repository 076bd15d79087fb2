// Exception classes live in Python (npu_launcher.errors) so users catch them by name;
// set_error_types() hands them to C++ at import. Until then builtin types are used.
#include "launcher.h"

namespace npl {

PyObject *ErrArgument = nullptr;
PyObject *ErrArgumentType = nullptr;
PyObject *ErrLaunch = nullptr;
PyObject *ErrDriver = nullptr;
PyObject *ErrDescriptor = nullptr;

PyObject *err_or(PyObject *e, PyObject *fallback) { return e ? e : fallback; }

}  // namespace npl
