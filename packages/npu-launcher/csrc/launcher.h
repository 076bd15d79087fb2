// The Python extension's declarations: the pre-bound launch object and the Python-facing
// hooks (the kernel model is kernel.h). No torch, CUDA or CANN header is included anywhere:
// drivers are opened with dlopen and their few functions are declared in *_api.h.
#pragma once

#include <Python.h>

#include "kernel.h"

namespace npl {

// The pre-bound launch object: a CPython type with per-instance vectorcall.
struct LaunchObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  Kernel *kernel;
};

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

// driver_sim.cpp (the cuda and ascend launches are in drivers.h)
bool sim_launch(Kernel *k, uint32_t grid[3], PyObject *const *args, Py_ssize_t nargs);

// capi.cpp: the C ABI's capsule (npu_launcher_capi.h)
PyObject *capi_capsule(PyObject *wrap, const char *libtorch_cpu);

}  // namespace npl
