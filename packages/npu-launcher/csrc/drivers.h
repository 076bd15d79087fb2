// Bind-time entry points of the three drivers (module.cpp calls them; direct.cpp the cuda and
// ascend ones). Each returns false after driver_fail (kernel.h); on success the Kernel holds
// the driver's handles. Launch entry points: cuda_launch / ascend_launch below.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kernel.h"

namespace npl {

// cuda
std::vector<std::pair<std::string, std::string>> cuda_symbols();
bool cuda_load_api();
bool cuda_capability(int device, int *major, int *minor);
bool cuda_bind(Kernel *k, const char *cubin, size_t cubin_size, int num_warps, int shared,
               int arch, int device, int trailing_null_params, int *n_regs, int *n_spills);

// ascend
std::vector<std::pair<std::string, std::string>> ascend_symbols();
bool ascend_load_api();
// Packed argument struct of triton-ascend's launcher: false if a kind has no Ascend C type.
bool ascend_layout(const std::vector<int> &kinds, bool ffts, bool simt_only,
                   std::vector<uint32_t> &offsets, uint32_t &grid_offset, uint32_t &size,
                   int &bad_index);
bool ascend_bind(Kernel *k, const char *binary, size_t size, const std::string &mix_mode,
                 const std::string &soc, int device);

// the launch with validated slots (8 bytes per argument); release
bool cuda_launch(Kernel *k, uint32_t grid[3], uint64_t stream, Slot *slots);
void cuda_release(Kernel *k);
bool ascend_launch(Kernel *k, uint32_t grid[3], uint64_t stream, Slot *slots);
void ascend_release(Kernel *k);

// sim (Python: the extension only)
bool sim_bind(Kernel *k, PyObject *entry, PyObject *fn, PyObject *constexprs);
void sim_release(Kernel *k);

}  // namespace npl
