// Grid slots: launch.at(grid_x, grid_y, grid_z, ignore_trailing=0) -> slot(stream, *args).
#include "launcher.h"  // Python.h first
#include "drivers.h"

#include <structmember.h>

#include <cstring>

namespace npl {
namespace {

// The call site of a compiled wrapper whose grid is fixed: the grid is validated once, and
// trailing arguments the call passes but the kernel does not take (a template's grid
// literals) are dropped here instead of in a Python frame.
struct GridSlot {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject *launch;  // owned LaunchObject
  uint32_t grid[3];
  Py_ssize_t ignore_trailing;
};

PyObject *slot_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
  GridSlot *gs = reinterpret_cast<GridSlot *>(self);
  Kernel *k = reinterpret_cast<LaunchObject *>(gs->launch)->kernel;
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (!no_keywords(k, kwnames)) return nullptr;
  if (nargs != k->call_count() + 1 + gs->ignore_trailing) {
    count_error(k, "(at its fixed grid) stream", gs->ignore_trailing, nargs);
    return nullptr;
  }
  uint64_t stream;
  if (!read_stream(k, args[0], &stream)) return nullptr;
  return launch_args(k, gs->grid, stream, args + 1);
}

void slot_dealloc(PyObject *self) {
  Py_CLEAR(reinterpret_cast<GridSlot *>(self)->launch);
  PyTypeObject *tp = Py_TYPE(self);
  tp->tp_free(self);
  Py_DECREF(tp);
}

PyObject *slot_repr(PyObject *self) {
  GridSlot *gs = reinterpret_cast<GridSlot *>(self);
  return PyUnicode_FromFormat("<npu_launcher grid slot (%u, %u, %u) of %R, ignoring %zd trailing>",
                              gs->grid[0], gs->grid[1], gs->grid[2], gs->launch, gs->ignore_trailing);
}

PyObject *slot_get_launch(PyObject *self, void *) {
  return Py_NewRef(reinterpret_cast<GridSlot *>(self)->launch);
}

PyObject *slot_get_grid(PyObject *self, void *) {
  GridSlot *gs = reinterpret_cast<GridSlot *>(self);
  return Py_BuildValue("(III)", gs->grid[0], gs->grid[1], gs->grid[2]);
}

PyGetSetDef slot_getset[] = {
    {"launch", slot_get_launch, nullptr, "the launch object", nullptr},
    {"grid", slot_get_grid, nullptr, "(grid_x, grid_y, grid_z)", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMemberDef slot_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, (Py_ssize_t)offsetof(GridSlot, vectorcall), READONLY, nullptr},
    {"ignore_trailing", T_PYSSIZET, (Py_ssize_t)offsetof(GridSlot, ignore_trailing), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyType_Slot slot_type_slots[] = {
    {Py_tp_dealloc, (void *)slot_dealloc},
    {Py_tp_repr, (void *)slot_repr},
    {Py_tp_call, (void *)PyVectorcall_Call},
    {Py_tp_getset, (void *)slot_getset},
    {Py_tp_members, (void *)slot_members},
    {Py_tp_doc, (void *)"slot(stream, *kernel_args[, *ignored]): one launch at a fixed grid."},
    {0, nullptr}};

PyType_Spec slot_spec = {"npu_launcher._native.GridSlot", sizeof(GridSlot), 0,
                         Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL, slot_type_slots};

PyTypeObject *slot_type = nullptr;

}  // namespace

PyObject *launch_at(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  Kernel *k = reinterpret_cast<LaunchObject *>(self)->kernel;
  if (nargs != 3 && nargs != 4) {
    PyErr_Format(PyExc_TypeError, "npu_launcher: kernel '%s': at(grid_x, grid_y, grid_z, "
                 "ignore_trailing=0) takes 3 or 4 arguments, got %zd", k->name.c_str(), nargs);
    return nullptr;
  }
  uint32_t grid[3];
  if (!read_grid(k, args[0], "grid_x", &grid[0]) || !read_grid(k, args[1], "grid_y", &grid[1]) ||
      !read_grid(k, args[2], "grid_z", &grid[2]))
    return nullptr;
  Py_ssize_t ignore = 0;
  if (nargs == 4) {
    ignore = PyLong_AsSsize_t(args[3]);
    if (ignore == -1 && PyErr_Occurred()) return nullptr;
    if (ignore < 0 || ignore > kMaxArgs) {
      PyErr_Format(err_or(ErrArgument, PyExc_ValueError),
                   "npu_launcher: kernel '%s': ignore_trailing must be in [0, %d], got %zd",
                   k->name.c_str(), kMaxArgs, ignore);
      return nullptr;
    }
  }
  if (!slot_type && !(slot_type = (PyTypeObject *)PyType_FromSpec(&slot_spec))) return nullptr;
  GridSlot *gs = PyObject_New(GridSlot, slot_type);
  if (!gs) return nullptr;
  gs->vectorcall = slot_vectorcall;
  gs->launch = Py_NewRef(self);
  std::memcpy(gs->grid, grid, sizeof grid);
  gs->ignore_trailing = ignore;
  return reinterpret_cast<PyObject *>(gs);
}

}  // namespace npl
