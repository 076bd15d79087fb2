"""The caching allocator: reuse, statistics, private pools, checkpoints."""

import torch

import npu_sim._runtime as rt


def _C():
    return rt.ext()


def test_freed_blocks_are_reused_and_counted():
    torch.npu.empty_cache()
    x = torch.empty(1000, device="npu")
    ptr = x.data_ptr()
    stats = torch.npu.memory_stats()
    del x
    y = torch.empty(1000, device="npu")
    assert y.data_ptr() == ptr
    after = torch.npu.memory_stats()
    assert after["num_cache_hits"] == stats["num_cache_hits"] + 1
    assert after["reserved_bytes.all.current"] == stats["reserved_bytes.all.current"]


def test_allocated_reserved_peak_and_empty_cache():
    torch.npu.empty_cache()
    base_alloc, base_res = torch.npu.memory_allocated(), torch.npu.memory_reserved()
    torch.npu.reset_peak_memory_stats()
    x = torch.empty(4096, dtype=torch.uint8, device="npu")  # exactly 8 x 512-byte rounds
    assert torch.npu.memory_allocated() == base_alloc + 4096
    assert torch.npu.max_memory_allocated() >= base_alloc + 4096
    del x
    assert torch.npu.memory_allocated() == base_alloc
    assert torch.npu.memory_reserved() == base_res + 4096  # cached, not returned
    assert torch.npu.max_memory_allocated() >= base_alloc + 4096
    torch.npu.reset_peak_memory_stats()
    assert torch.npu.max_memory_allocated() == base_alloc
    torch.npu.empty_cache()
    assert torch.npu.memory_reserved() == base_res


def test_torch_accelerator_memory_api_reads_the_same_allocator():
    # the allocator is a c10::DeviceAllocator, as torch_npu's: torch.accelerator's memory
    # functions (which upstream Inductor calls, e.g. empty_cache after combo benchmarks) work
    acc = torch.accelerator
    torch.npu.empty_cache()
    acc.reset_peak_memory_stats()
    base = acc.memory_allocated()
    x = torch.empty(4096, dtype=torch.uint8, device="npu")
    assert acc.memory_allocated() == torch.npu.memory_allocated() == base + 4096
    stats = acc.memory_stats()
    assert stats["allocated_bytes.all.peak"] >= base + 4096
    assert stats["allocation.all.current"] == torch.npu.memory_stats()["active.all.current"] >= 1
    reserved = acc.memory_reserved()
    del x
    assert acc.memory_allocated() == base and acc.memory_reserved() == reserved  # cached
    acc.empty_cache()
    assert acc.memory_reserved() == torch.npu.memory_reserved() < reserved
    acc.reset_peak_memory_stats()
    assert acc.max_memory_allocated() == base
    free, total = acc.get_memory_info()
    assert 0 < free <= total


def test_allocation_sizes_round_to_512_bytes():
    before = torch.npu.memory_allocated()
    x = torch.empty(1, dtype=torch.uint8, device="npu")
    assert torch.npu.memory_allocated() - before == 512
    assert x.data_ptr() % 64 == 0
    del x


def test_private_pool_routes_this_threads_allocations_and_release_returns_memory():
    pool = torch.npu.graph_pool_handle()
    _C()._npu_beginAllocateCurrentThreadToPool(0, pool)
    try:
        a = torch.empty(256, device="npu")
        b = torch.empty(512, device="npu")
    finally:
        _C()._npu_endAllocateToPool(0, pool)
    outside = torch.empty(256, device="npu")
    live = set(_C()._pool_live_allocations(0, pool))
    assert live == {a.data_ptr(), b.data_ptr()} and outside.data_ptr() not in live
    assert _C()._npu_checkPoolLiveAllocations(0, pool, {a.data_ptr(), b.data_ptr()})
    del a
    assert set(_C()._pool_live_allocations(0, pool)) == {b.data_ptr()}
    torch.npu.empty_cache()  # empties the default pool's cache, never a live private pool's
    assert set(_C()._pool_live_allocations(0, pool)) == {b.data_ptr()}
    in_pool_cached = torch.npu.memory_reserved()
    _C()._npu_releasePool(0, pool)  # the freed block of `a` goes back to the system
    assert torch.npu.memory_reserved() == in_pool_cached - 1024
    del b  # the last live block of a released pool frees the pool's memory
    assert torch.npu.memory_reserved() == in_pool_cached - 1024 - 2048
    assert _C()._pool_live_allocations(0, pool) == []


def test_checkpoint_and_restore_a_pools_state():
    pool = torch.npu.graph_pool_handle()
    _C()._npu_beginAllocateCurrentThreadToPool(0, pool)
    try:
        keep = torch.empty(128, device="npu")
        state = _C()._npu_getCheckpointState(0, pool)
        later = torch.empty(128, device="npu")  # allocated after the checkpoint
    finally:
        _C()._npu_endAllocateToPool(0, pool)
    keep_ptr, later_ptr = keep.data_ptr(), later.data_ptr()
    # restore: `later` becomes free (its storage is stale and must not free it again),
    # `keep` stays live; a rebuilt storage over `keep` takes ownership
    del keep
    rebuilt = _C()._construct_storage_from_data_pointer(keep_ptr, 0, 512)
    _C()._npu_setCheckpointPoolState(
        0, state, [later.untyped_storage()._cdata], [rebuilt.untyped_storage()._cdata]
    )
    assert set(_C()._pool_live_allocations(0, pool)) == {keep_ptr}
    del later  # stale: no double free
    _C()._npu_beginAllocateCurrentThreadToPool(0, pool)
    try:
        again = torch.empty(128, device="npu")
    finally:
        _C()._npu_endAllocateToPool(0, pool)
    assert again.data_ptr() == later_ptr  # the memory `later` held was free for reuse
    del rebuilt  # now owns `keep`'s block: dying frees it
    assert set(_C()._pool_live_allocations(0, pool)) == {later_ptr}
    del again
    _C()._npu_releasePool(0, pool)
