// Bind-time entry points of the three drivers (module.cpp calls them). Each returns false
// with a Python exception set; on success the Kernel holds the driver's handles.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "launcher.h"

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

// sim
bool sim_bind(Kernel *k, PyObject *entry, PyObject *fn, PyObject *constexprs);
void sim_release(Kernel *k);

}  // namespace npl
