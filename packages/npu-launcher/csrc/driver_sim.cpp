// sim driver: arguments are validated in C++ like on hardware, then npu-sim's launch entry
// (entry point group npu_inductor.sim_launch, name "launch") runs the kernel in Triton's
// interpreter: launch(fn, (gx, gy, gz), args, constexprs).
#include "launcher.h"  // Python.h first
#include "drivers.h"

namespace npl {

bool sim_bind(Kernel *k, PyObject *entry, PyObject *fn, PyObject *constexprs) {
  if (!PyCallable_Check(entry) || !PyDict_Check(constexprs)) {
    PyErr_SetString(PyExc_TypeError, "npu_launcher: sim entry must be callable, constexprs a dict");
    return false;
  }
  Py_INCREF(entry);
  Py_INCREF(fn);
  Py_INCREF(constexprs);
  k->sim.entry = entry;
  k->sim.fn = fn;
  k->sim.constexprs = constexprs;
  return true;
}

bool sim_launch(Kernel *k, uint32_t grid[3], PyObject *const *args, Py_ssize_t nargs) {
  PyObject *grid_t = Py_BuildValue("(III)", grid[0], grid[1], grid[2]);
  if (!grid_t) return false;
  PyObject *args_t = PyTuple_New(nargs);
  if (!args_t) { Py_DECREF(grid_t); return false; }
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    Py_INCREF(args[i]);
    PyTuple_SET_ITEM(args_t, i, args[i]);
  }
  // the interpreter runs the Python kernel, which takes specialized arguments too: it gets the
  // value they were compiled with (Inductor's call passes a dummy -1 for a None)
  for (const SpecializedArg &s : k->specialized) {
    if (!s.value || s.position >= nargs) continue;
    PyObject *old = PyTuple_GET_ITEM(args_t, s.position);
    Py_INCREF(s.value);
    PyTuple_SET_ITEM(args_t, s.position, s.value);
    Py_DECREF(old);
  }
  PyObject *call[4] = {k->sim.fn, grid_t, args_t, k->sim.constexprs};
  PyObject *r = PyObject_Vectorcall(k->sim.entry, call, 4, nullptr);
  Py_DECREF(grid_t);
  Py_DECREF(args_t);
  if (!r) return false;
  Py_DECREF(r);
  return true;
}

void sim_release(Kernel *k) {
  Py_CLEAR(k->sim.entry);
  Py_CLEAR(k->sim.fn);
  Py_CLEAR(k->sim.constexprs);
}

}  // namespace npl
