// Caching allocator over host memory, with private pools as graph trees need them. It is a
// c10::DeviceAllocator (as torch_npu's is), so torch.accelerator's memory API
// (empty_cache, memory_stats, memory_allocated, reset_peak_memory_stats) works on npu.
// Blocks are rounded to 512 bytes and kept per (device, pool) after free for reuse.
// Memory handed out while the calling thread captures a graph is poisoned (all bytes 0xFF:
// NaN in every floating dtype, -1 in signed integers) so reading it before replay shows.
#include "sim.h"

#include <algorithm>

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

namespace npu_sim {
namespace {

constexpr size_t kRound = 512;
constexpr size_t kAlign = 64;
const PoolId kDefaultPool{0, 0};

struct Block {
  uintptr_t ptr;
  size_t size;
  int device;
  PoolId pool;
  bool allocated;
};

struct Pool {
  std::multimap<size_t, Block*> free;  // size -> cached block
  int64_t users = 1;                   // graphs / handles sharing this pool
  int64_t live = 0;                    // allocated blocks
};

struct DeviceState {
  std::map<PoolId, Pool> pools;
  MemoryStats stats;
};

std::mutex g_mu;
std::unordered_map<uintptr_t, Block*> g_blocks;
DeviceState g_devices[kMaxDevices];
uint64_t g_next_pool = 1;
thread_local std::map<int, PoolId> t_pool_of_device;  // begin_allocate_to_pool

void free_block_memory_locked(Block* b) {
  auto& st = g_devices[b->device].stats;
  st.reserved -= static_cast<int64_t>(b->size);
  st.released_total += static_cast<int64_t>(b->size);
  st.num_device_frees += 1;
  g_blocks.erase(b->ptr);
  std::free(reinterpret_cast<void*>(b->ptr));
  delete b;
}

// Return cached blocks of a pool to the system; drop the pool once nothing uses it.
void trim_pool_locked(int device, PoolId id) {
  auto& pools = g_devices[device].pools;
  auto it = pools.find(id);
  if (it == pools.end()) return;
  for (auto& kv : it->second.free) free_block_memory_locked(kv.second);
  it->second.free.clear();
  if (id != kDefaultPool && it->second.users <= 0 && it->second.live == 0) pools.erase(it);
}

void raw_free(void* ctx) {
  if (!ctx) return;
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_blocks.find(reinterpret_cast<uintptr_t>(ctx));
  TORCH_INTERNAL_ASSERT(it != g_blocks.end(), "npu-sim: free of an unknown block");
  Block* b = it->second;
  TORCH_INTERNAL_ASSERT(b->allocated, "npu-sim: double free");
  b->allocated = false;
  auto& dev = g_devices[b->device];
  dev.stats.allocated -= static_cast<int64_t>(b->size);
  dev.stats.active_blocks -= 1;
  dev.stats.num_frees += 1;
  dev.stats.freed_total += static_cast<int64_t>(b->size);
  auto& pool = dev.pools[b->pool];
  pool.live -= 1;
  pool.free.emplace(b->size, b);
  if (b->pool != kDefaultPool && pool.users <= 0) trim_pool_locked(b->device, b->pool);
}

void noop_free(void*) {}

void trim_pool_all_devices(PoolId pool) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (int d = 0; d < kMaxDevices; ++d) trim_pool_locked(d, pool);
}

void set_stat(c10::CachingAllocator::StatArray& a, int64_t current, int64_t peak, int64_t allocated,
              int64_t freed) {
  // one pool kind on npu-sim: the aggregate is all there is
  auto& st = a[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
  st.current = current;
  st.peak = peak;
  st.allocated = allocated;
  st.freed = freed;
}

class SimAllocator final : public c10::DeviceAllocator {
 public:
  bool initialized() override { return true; }
  // {0, 0}: the default pools; a private pool's cached blocks otherwise
  void emptyCache(c10::MempoolId_t pool) override { trim_pool_all_devices(PoolId{pool.first, pool.second}); }
  // one host memory and in-order streams: a block is never reused while a stream still reads it
  void recordStream(const c10::DataPtr&, c10::Stream) override {}
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    MemoryStats m = memory_stats(device);
    c10::CachingDeviceAllocator::DeviceStats s;
    set_stat(s.allocated_bytes, m.allocated, m.allocated_peak, m.allocated_total, m.freed_total);
    set_stat(s.active_bytes, m.allocated, m.allocated_peak, m.allocated_total, m.freed_total);
    set_stat(s.requested_bytes, m.allocated, m.allocated_peak, m.allocated_total, m.freed_total);
    set_stat(s.reserved_bytes, m.reserved, m.reserved_peak, m.reserved_total, m.released_total);
    set_stat(s.allocation, m.active_blocks, m.active_blocks_peak, m.num_allocs, m.num_frees);
    set_stat(s.active, m.active_blocks, m.active_blocks_peak, m.num_allocs, m.num_frees);
    s.num_device_alloc = m.num_device_allocs;
    s.num_device_free = m.num_device_frees;
    return s;
  }
  void resetAccumulatedStats(c10::DeviceIndex device) override { reset_accumulated_stats(device); }
  void resetPeakStats(c10::DeviceIndex device) override { reset_peak_stats(device); }
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    // the device's memory is the host's: (free, total) as torch.npu.mem_get_info reports them
    check_device_index(device);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t total = (size_t)sysconf(_SC_PHYS_PAGES) * page;
    size_t avail = (size_t)sysconf(_SC_AVPHYS_PAGES) * page;
    return {avail, total};
  }

  c10::DataPtr allocate(size_t nbytes) override {
    int device = current_device();
    if (nbytes == 0) return c10::DataPtr(nullptr, c10::Device(kNpu, device));
    const size_t size = (nbytes + kRound - 1) / kRound * kRound;
    Block* b = nullptr;
    {
      std::lock_guard<std::mutex> lock(g_mu);
      auto& dev = g_devices[device];
      auto pit = t_pool_of_device.find(device);
      PoolId pool_id = pit == t_pool_of_device.end() ? kDefaultPool : pit->second;
      auto& pool = dev.pools[pool_id];
      // best fit, but never hand out a block more than twice the request
      auto it = pool.free.lower_bound(size);
      if (it != pool.free.end() && it->first <= 2 * size) {
        b = it->second;
        pool.free.erase(it);
        dev.stats.num_cache_hits += 1;
      } else {
        void* p = std::aligned_alloc(kAlign, size);
        if (!p) {  // give cached blocks back and retry once, as a device allocator would
          for (auto& kv : dev.pools) trim_pool_locked(device, kv.first);
          p = std::aligned_alloc(kAlign, size);
        }
        TORCH_CHECK_WITH(OutOfMemoryError, p, "npu-sim: out of host memory allocating ", size, " bytes");
        b = new Block{reinterpret_cast<uintptr_t>(p), size, device, pool_id, false};
        g_blocks.emplace(b->ptr, b);
        dev.stats.reserved += static_cast<int64_t>(size);
        dev.stats.reserved_peak = std::max(dev.stats.reserved_peak, dev.stats.reserved);
        dev.stats.reserved_total += static_cast<int64_t>(size);
        dev.stats.num_device_allocs += 1;
      }
      b->allocated = true;
      pool.live += 1;
      dev.stats.allocated += static_cast<int64_t>(size);
      dev.stats.allocated_peak = std::max(dev.stats.allocated_peak, dev.stats.allocated);
      dev.stats.active_blocks += 1;
      dev.stats.active_blocks_peak = std::max(dev.stats.active_blocks_peak, dev.stats.active_blocks);
      dev.stats.num_allocs += 1;
      dev.stats.allocated_total += static_cast<int64_t>(size);
    }
    if (is_capturing()) std::memset(reinterpret_cast<void*>(b->ptr), 0xFF, b->size);
    void* p = reinterpret_cast<void*>(b->ptr);
    return c10::DataPtr(p, p, &raw_free, c10::Device(kNpu, device));
  }
  c10::DeleterFnPtr raw_deleter() const override { return &raw_free; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

SimAllocator g_allocator;

}  // namespace

c10::Allocator* allocator() { return &g_allocator; }

// Storage constructors (torch.UntypedStorage(n, device="npu"), storage.clone(), deepcopy) ask
// c10::GetAllocator(PrivateUse1), which is a null pointer until a backend sets it.
void register_allocator() { c10::SetAllocator(kNpu, &g_allocator); }

MemoryStats memory_stats(int device) {
  check_device_index(device);
  std::lock_guard<std::mutex> lock(g_mu);
  return g_devices[device].stats;
}

void reset_peak_stats(int device) {
  check_device_index(device);
  std::lock_guard<std::mutex> lock(g_mu);
  auto& st = g_devices[device].stats;
  st.allocated_peak = st.allocated;
  st.reserved_peak = st.reserved;
  st.active_blocks_peak = st.active_blocks;
}

void reset_accumulated_stats(int device) {
  check_device_index(device);
  std::lock_guard<std::mutex> lock(g_mu);
  auto& st = g_devices[device].stats;
  st.num_allocs = st.num_frees = st.num_cache_hits = 0;
  st.allocated_total = st.freed_total = st.reserved_total = st.released_total = 0;
  st.num_device_allocs = st.num_device_frees = 0;
}

void empty_cache() {
  std::lock_guard<std::mutex> lock(g_mu);
  for (int d = 0; d < kMaxDevices; ++d) trim_pool_locked(d, kDefaultPool);
}

PoolId new_pool_id() {
  std::lock_guard<std::mutex> lock(g_mu);
  return PoolId{0, g_next_pool++};
}

void begin_allocate_to_pool(int device, PoolId pool) {
  check_device_index(device);
  TORCH_CHECK(pool != kDefaultPool, "npu-sim: (0, 0) is the default pool, not a private one");
  std::lock_guard<std::mutex> lock(g_mu);
  g_devices[device].pools.try_emplace(pool);  // users = 1 for a new pool
  t_pool_of_device[device] = pool;
}

void end_allocate_to_pool(int device, PoolId pool) {
  auto it = t_pool_of_device.find(device);
  TORCH_CHECK(it != t_pool_of_device.end() && it->second == pool,
              "npu-sim: end_allocate_to_pool for a pool this thread is not allocating to");
  t_pool_of_device.erase(it);
}

void retain_pool(int device, PoolId pool) {
  check_device_index(device);
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_devices[device].pools.find(pool);
  if (it == g_devices[device].pools.end()) {
    g_devices[device].pools.try_emplace(pool);
  } else {
    it->second.users += 1;
  }
}

void release_pool(int device, PoolId pool) {
  check_device_index(device);
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_devices[device].pools.find(pool);
  if (it == g_devices[device].pools.end()) return;
  it->second.users -= 1;
  if (it->second.users <= 0) trim_pool_locked(device, pool);
}

std::vector<uintptr_t> pool_live_allocations(int device, PoolId pool) {
  check_device_index(device);
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<uintptr_t> out;
  for (auto& kv : g_blocks) {
    if (kv.second->device == device && kv.second->pool == pool && kv.second->allocated) out.push_back(kv.first);
  }
  return out;
}

std::shared_ptr<PoolCheckpoint> checkpoint_pool(int device, PoolId pool) {
  auto state = std::make_shared<PoolCheckpoint>();
  state->device = device;
  state->pool = pool;
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& kv : g_blocks) {
    Block* b = kv.second;
    if (b->device == device && b->pool == pool && b->allocated) state->live.emplace_back(b->ptr, b->size);
  }
  return state;
}

void restore_pool(const PoolCheckpoint& state, const std::vector<uintptr_t>& stale,
                  const std::vector<uintptr_t>& add_deleters) {
  // Storages whose blocks the restore frees must not free them again when they die.
  for (auto s : stale) {
    auto* impl = reinterpret_cast<c10::StorageImpl*>(s);
    (void)impl->_mutable_data_ptr_no_checks().compare_exchange_deleter(&raw_free, &noop_free);
  }
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto& dev = g_devices[state.device];
    auto& pool = dev.pools[state.pool];
    std::unordered_map<uintptr_t, size_t> want(state.live.begin(), state.live.end());
    for (auto& kv : g_blocks) {
      Block* b = kv.second;
      if (b->device != state.device || b->pool != state.pool) continue;
      bool should_live = want.count(b->ptr) > 0;
      if (b->allocated && !should_live) {
        b->allocated = false;
        pool.live -= 1;
        pool.free.emplace(b->size, b);
        dev.stats.allocated -= static_cast<int64_t>(b->size);
        dev.stats.active_blocks -= 1;
      } else if (!b->allocated && should_live) {
        auto range = pool.free.equal_range(b->size);
        for (auto it = range.first; it != range.second; ++it) {
          if (it->second == b) {
            pool.free.erase(it);
            break;
          }
        }
        b->allocated = true;
        pool.live += 1;
        dev.stats.allocated += static_cast<int64_t>(b->size);
        dev.stats.allocated_peak = std::max(dev.stats.allocated_peak, dev.stats.allocated);
        dev.stats.active_blocks += 1;
      }
      want.erase(b->ptr);
    }
    TORCH_CHECK(want.empty(), "npu-sim: checkpoint names ", want.size(), " block(s) the pool no longer has");
  }
  // Storages rebuilt over live blocks now own them.
  for (auto s : add_deleters) {
    auto* impl = reinterpret_cast<c10::StorageImpl*>(s);
    bool swapped = impl->_mutable_data_ptr_no_checks().compare_exchange_deleter(&noop_free, &raw_free);
    TORCH_CHECK(swapped, "npu-sim: storage already owns its block");
  }
}

int64_t first_outside_npu_memory(const uint64_t* ptrs, const bool* mask, size_t n, size_t itemsize) {
  std::vector<std::pair<uintptr_t, uintptr_t>> blocks;  // [start, end), sorted
  {
    std::lock_guard<std::mutex> lock(g_mu);
    blocks.reserve(g_blocks.size());
    for (auto& kv : g_blocks) blocks.emplace_back(kv.first, kv.first + kv.second->size);
  }
  std::sort(blocks.begin(), blocks.end());
  uintptr_t lo = 1, hi = 0;  // the block of the previous lane: lanes are mostly in one block
  for (size_t i = 0; i < n; ++i) {
    if (mask && !mask[i]) continue;
    const uintptr_t p = ptrs[i];
    if (p >= lo && p + itemsize <= hi) continue;
    auto it = std::upper_bound(blocks.begin(), blocks.end(), std::make_pair(p, UINTPTR_MAX));
    if (it == blocks.begin()) return static_cast<int64_t>(i);
    --it;
    if (p + itemsize > it->second) return static_cast<int64_t>(i);
    lo = it->first;
    hi = it->second;
  }
  return -1;
}

bool is_sim_block(const void* ptr) {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_blocks.count(reinterpret_cast<uintptr_t>(ptr)) > 0;
}

int device_of_ptr(const void* ptr) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto p = reinterpret_cast<uintptr_t>(ptr);
  auto it = g_blocks.find(p);
  if (it != g_blocks.end()) return it->second->device;
  for (auto& kv : g_blocks) {  // an interior pointer
    if (p >= kv.first && p < kv.first + kv.second->size) return kv.second->device;
  }
  return -1;
}

c10::Storage storage_from_block(uintptr_t ptr, size_t nbytes, int device) {
  void* p = reinterpret_cast<void*>(ptr);
  c10::DataPtr dp(p, p, &noop_free, c10::Device(kNpu, device));
  return c10::Storage(c10::Storage::use_byte_size_t(), nbytes, std::move(dp), allocator(), /*resizable=*/false);
}

}  // namespace npu_sim
