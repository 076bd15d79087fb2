// npu-sim: a simulated Ascend device behind the PrivateUse1 dispatch key.
// Every storage is host memory from our caching allocator, so data_ptr() is a real address
// and a CPU tensor can alias it. Declarations shared by the translation units.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/stack.h>
#include <c10/core/Allocator.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace npu_sim {

constexpr c10::DeviceType kNpu = c10::DeviceType::PrivateUse1;
using PoolId = std::pair<uint64_t, uint64_t>;  // (0, 0) is the default pool

// ---- device.cpp --------------------------------------------------------------------------
constexpr int kMaxDevices = 16;  // the most devices set_device_count accepts
void set_device_count(int n);
int device_count();
int current_device();
void set_current_device(int index);
void check_device_index(int index);
double host_time_ms();  // monotonic host clock, what events record
struct DeviceIndexGuard {  // allocations follow the current device
  int old;
  explicit DeviceIndexGuard(int d) : old(current_device()) { set_current_device(d); }
  ~DeviceIndexGuard() { set_current_device(old); }
};

void register_hooks();  // hooks.cpp, once per process

// ---- allocator.cpp -----------------------------------------------------------------------
c10::Allocator* allocator();
void register_allocator();  // the PrivateUse1 allocator torch's storage constructors use
struct MemoryStats {
  int64_t allocated = 0, allocated_peak = 0, reserved = 0, reserved_peak = 0;
  int64_t num_allocs = 0, num_frees = 0, num_cache_hits = 0, active_blocks = 0;
  // accumulated (reset by reset_accumulated_stats) and the block-count peak, for
  // c10::DeviceAllocator::getDeviceStats (torch.accelerator.memory_stats)
  int64_t active_blocks_peak = 0, allocated_total = 0, freed_total = 0;
  int64_t reserved_total = 0, released_total = 0, num_device_allocs = 0, num_device_frees = 0;
};
MemoryStats memory_stats(int device);
void reset_peak_stats(int device);
void reset_accumulated_stats(int device);
void empty_cache();
// Route allocations of the calling thread on `device` to `pool` until end_allocate_to_pool.
void begin_allocate_to_pool(int device, PoolId pool);
void end_allocate_to_pool(int device, PoolId pool);
// Drop one user of a private pool; its memory returns to the system once unused.
void release_pool(int device, PoolId pool);
void retain_pool(int device, PoolId pool);
PoolId new_pool_id();
// Addresses of the live (allocated) blocks of a pool.
std::vector<uintptr_t> pool_live_allocations(int device, PoolId pool);
// Checkpoint: the set of live blocks of a pool; restore makes exactly those live.
struct PoolCheckpoint {
  int device;
  PoolId pool;
  std::vector<std::pair<uintptr_t, size_t>> live;
};
std::shared_ptr<PoolCheckpoint> checkpoint_pool(int device, PoolId pool);
// Restores `state`. `stale` storages (StorageImpl*) lose their deleters (their blocks are now
// free); `add_deleters` storages (built without ownership) get the allocator's deleter.
void restore_pool(const PoolCheckpoint& state, const std::vector<uintptr_t>& stale,
                  const std::vector<uintptr_t>& add_deleters);
bool is_sim_block(const void* ptr);
// The first of `n` addresses (where `mask` is set; mask may be null) whose `itemsize` bytes are
// not inside one npu block, or -1: the interpreter checks a kernel's loads and stores with it.
int64_t first_outside_npu_memory(const uint64_t* ptrs, const bool* mask, size_t n, size_t itemsize);
int device_of_ptr(const void* ptr);  // -1 when not ours
// A storage over an existing block, owning nothing (graph trees rebuild outputs this way).
c10::Storage storage_from_block(uintptr_t ptr, size_t nbytes, int device);

// ---- capture.cpp -------------------------------------------------------------------------
// A graph records device work on the capturing thread instead of executing it.
struct Graph;
Graph* capturing_graph();      // nullptr when the calling thread is not capturing
bool is_capturing();
void record(std::function<void()> action, const char* what);
// Raised for host synchronization or device reads during capture. `acl` is the runtime call
// torch_npu makes for it, named in the device's error under the capture rules.
[[noreturn]] void fail_during_capture(const std::string& what, const char* acl = "aclrtSynchronizeStream");
void check_not_capturing(const std::string& what, const char* acl = "aclrtSynchronizeStream");
// Capture rules (npu_sim.config.capture_rules, read at capture_begin): an op outside the
// capturable set (npu_sim/capturable_ops.tsv, handed over by _set_capturable_ops) raises
// torch_npu's aclop capture error and invalidates the capture. No-op outside capture.
void check_capturable(const std::string& op_name);
bool capture_rules_on();  // the calling thread captures with the rules on

// ---- tensors.cpp -------------------------------------------------------------------------
// A CPU tensor aliasing the memory of an npu tensor (no copy).
at::Tensor cpu_alias(const at::Tensor& npu);
// Where a recorded op finds its tensors again at replay: address + geometry, no ownership.
struct TensorSpec {
  void* data;
  std::vector<int64_t> sizes, strides;
  c10::ScalarType dtype;
  at::Tensor cpu() const;  // a CPU alias at replay time
};
TensorSpec spec_of(const at::Tensor& npu);
at::Tensor empty_npu(c10::IntArrayRef sizes, c10::IntArrayRef strides, c10::ScalarType dtype,
                     int device);

// ---- fallback.cpp ------------------------------------------------------------------------
// Runs `op`'s CPU kernel on CPU aliases of the npu tensors on `stack` (recorded instead while
// capturing), as the boxed fallback does; ops torch routes differently for PrivateUse1 call it
// with the CPU op they stand for.
void run_on_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// ---- dtype_conversions.cpp ---------------------------------------------------------------
// Calls `op`'s CPU kernel on the CPU arguments on `stack`, converting the dtypes its kernel lacks
// that an accelerator takes (the table of npu_sim/fallback_dtypes.py, set when the device starts).
void call_cpu_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack);
void set_dtype_conversions(
    const std::vector<std::pair<std::string, std::vector<std::pair<c10::ScalarType, c10::ScalarType>>>>& rows);

// ---- sparse.cpp --------------------------------------------------------------------------
// Sparse COO tensors: a SparseTensorImpl (SparseCPU or SparsePrivateUse1) holding dense
// indices and values. `dense` maps the source's indices and values to the target device.
using DenseMap = std::function<at::Tensor(const at::Tensor&)>;
bool sparse_layout(const at::Tensor& t);  // COO or compressed (CSR, CSC, BSR, BSC)
// A CPU sparse stand-in of an npu sparse tensor (its indices/values as `dense` gives them).
at::Tensor sparse_to_cpu(const at::Tensor& npu, const DenseMap& dense);
// An npu sparse tensor holding `dense` of a CPU sparse result's indices and values.
at::Tensor sparse_to_npu(const at::Tensor& cpu, const DenseMap& dense);
// After a CPU kernel ran on `stand_in`: give `npu` the stand-in's indices, values, shape and
// coalesced flag where the kernel changed them (in-place and out= ops on sparse tensors).
void sparse_write_back(const at::Tensor& stand_in, const at::Tensor& npu, const DenseMap& dense);

// ---- generator.cpp -----------------------------------------------------------------------
const at::Generator& default_generator(int device);
at::Generator new_generator(int device);  // torch.Generator(device="npu")
// The CPU generator a CPU kernel can use in place of an npu generator.
at::Generator cpu_generator_of(const at::Generator& npu_generator);

}  // namespace npu_sim
