// Python bindings (module npu_sim._C). Private-pool and graph functions keep torch_npu's
// names (`_npu_beginAllocateCurrentThreadToPool`, ...) so code written against torch_npu._C
// runs on npu-sim unchanged.
#include "capture.h"
#include "sim.h"

#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/pybind.h>

namespace py = pybind11;
using namespace npu_sim;

namespace npu_sim {
int64_t eager_op_count();         // fallback.cpp
int64_t replayed_action_count();  // capture.cpp
}  // namespace npu_sim

namespace npu_sim {
void bind_distributed(py::module& m);  // distributed.cpp: the "hccl" process group backend
}

namespace {

PoolId to_pool(const py::tuple& t) {
  TORCH_CHECK(t.size() == 2, "npu-sim: a pool id is a (int, int) tuple");
  return PoolId{t[0].cast<uint64_t>(), t[1].cast<uint64_t>()};
}
py::tuple from_pool(PoolId p) { return py::make_tuple(p.first, p.second); }

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("_init", [](int count) {
    register_hooks();
    register_allocator();
    set_device_count(count);
  });
  m.def("_device_count", &device_count);
  m.def("_current_device", &current_device);
  m.def("_set_device", &set_current_device);
  m.def("_host_time_ms", &host_time_ms);

  // memory
  m.def("_memory_stats", [](int device) {
    auto s = memory_stats(device);
    py::dict d;
    d["allocated_bytes.all.current"] = s.allocated;
    d["allocated_bytes.all.peak"] = s.allocated_peak;
    d["reserved_bytes.all.current"] = s.reserved;
    d["reserved_bytes.all.peak"] = s.reserved_peak;
    d["active.all.current"] = s.active_blocks;
    d["num_allocs"] = s.num_allocs;
    d["num_frees"] = s.num_frees;
    d["num_cache_hits"] = s.num_cache_hits;
    return d;
  });
  m.def("_reset_peak_memory_stats", &reset_peak_stats);
  m.def("_empty_cache", &empty_cache);
  m.def("_is_sim_block", [](uintptr_t p) { return is_sim_block(reinterpret_cast<void*>(p)); });
  // (address of n uint64 pointers, address of n bools or 0, n, itemsize) -> first bad lane or -1
  m.def("_first_outside_npu_memory", [](uintptr_t ptrs, uintptr_t mask, size_t n, size_t itemsize) {
    return first_outside_npu_memory(reinterpret_cast<const uint64_t*>(ptrs), reinterpret_cast<const bool*>(mask), n,
                                    itemsize);
  });

  // private pools (torch_npu._C names)
  m.def("_graph_pool_handle", [] { return from_pool(new_pool_id()); });
  m.def("_npu_beginAllocateCurrentThreadToPool",
        [](int device, const py::tuple& pool) { begin_allocate_to_pool(device, to_pool(pool)); });
  m.def("_npu_endAllocateToPool", [](int device, const py::tuple& pool) { end_allocate_to_pool(device, to_pool(pool)); });
  m.def("_npu_releasePool", [](int device, const py::tuple& pool) { release_pool(device, to_pool(pool)); });
  m.def("_pool_live_allocations",
        [](int device, const py::tuple& pool) { return pool_live_allocations(device, to_pool(pool)); });
  m.def("_npu_checkPoolLiveAllocations", [](int device, const py::tuple& pool, const std::set<uintptr_t>& expected) {
    auto live = pool_live_allocations(device, to_pool(pool));
    return std::set<uintptr_t>(live.begin(), live.end()) == expected;
  });
  py::class_<PoolCheckpoint, std::shared_ptr<PoolCheckpoint>>(m, "_PoolCheckpoint")
      .def_readonly("device", &PoolCheckpoint::device)
      .def_property_readonly("pool", [](const PoolCheckpoint& s) { return from_pool(s.pool); })
      .def_readonly("live", &PoolCheckpoint::live);
  m.def("_npu_getCheckpointState",
        [](int device, const py::tuple& pool) { return checkpoint_pool(device, to_pool(pool)); });
  m.def("_npu_setCheckpointPoolState", [](int device, std::shared_ptr<PoolCheckpoint> state,
                                          const std::vector<uintptr_t>& stale, const std::vector<uintptr_t>& add) {
    TORCH_CHECK(state && state->device == device, "npu-sim: checkpoint of another device");
    restore_pool(*state, stale, add);
  });
  // A uint8 tensor over an existing block, owning nothing until a checkpoint restore
  // gives its storage a deleter.
  m.def("_construct_storage_from_data_pointer", [](uintptr_t ptr, int device, size_t nbytes) {
    auto storage = storage_from_block(ptr, nbytes, device);
    auto t = at::detail::make_tensor<c10::TensorImpl>(std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                      caffe2::TypeMeta::Make<uint8_t>());
    t.unsafeGetTensorImpl()->set_sizes_contiguous({static_cast<int64_t>(nbytes)});
    return t;
  });

  // capture
  m.def("_is_current_stream_capturing", &is_capturing);
  m.def("_record_python", [](py::function fn, const std::string& name) {
    auto holder = std::make_shared<py::function>(std::move(fn));
    record(
        [holder] {
          py::gil_scoped_acquire gil;
          (*holder)();
        },
        name.c_str());
  });
  m.def("_check_not_capturing", [](const std::string& what, const std::string& acl) { check_not_capturing(what, acl.c_str()); },
        py::arg("what"), py::arg("acl") = "aclrtSynchronizeStream");
  m.def("_set_capturable_ops", &set_capturable_ops);
  m.def("_live_graphs", &live_graphs);
  // device operations run outside a graph (fallback ops) and by replays (recorded actions):
  // benches read the share replayed from graphs (bench/capture_rules.py)
  m.def("_device_op_counts", [] { return py::make_tuple(eager_op_count(), replayed_action_count()); });
  m.def("_set_dtype_conversions", &set_dtype_conversions);  // npu_sim/fallback_dtypes.py's table
  m.def("_cpu_alias", [](const at::Tensor& t) {
    TORCH_CHECK(t.device().type() == kNpu, "npu-sim: _cpu_alias expects an npu tensor, got ", t.device());
    return cpu_alias(t);
  });
  py::class_<Graph>(m, "_NPUGraph")
      .def(py::init<>())
      .def("capture_begin", [](Graph& g, const py::tuple& pool, bool rules) { g.capture_begin(to_pool(pool), rules); },
           py::arg("pool") = py::make_tuple(0, 0), py::arg("rules") = false)
      .def("capture_end", &Graph::capture_end)
      .def("replay", &Graph::replay, py::call_guard<py::gil_scoped_release>())
      .def("reset", &Graph::reset)
      .def("pool", [](const Graph& g) { return from_pool(g.pool); })
      .def_readonly("replays", &Graph::replays)
      .def_readonly("invalidated", &Graph::invalidated)
      .def_property_readonly("recorded", [](const Graph& g) { return g.names; });

  // random
  m.def("_default_generator", [](int device) {
    return py::reinterpret_steal<py::object>(THPGenerator_initDefaultGenerator(default_generator(device)));
  });

  bind_distributed(m);
}
