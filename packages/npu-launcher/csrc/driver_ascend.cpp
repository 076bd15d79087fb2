// ascend driver: the CANN runtime opened at run time (libascendcl.so, which pulls in
// libruntime.so; NPU_LAUNCHER_CANN_LIBS overrides the list). Registration and launch follow
// triton-ascend 3.2's launcher: rtDevBinaryRegister + rtFunctionRegister once per kernel,
// then per call the packed argument struct (C2C control address when the SoC has FFTS,
// syncBlockLock, workspace, the kernel arguments, gridX/Y/Z) and rtKernelLaunch with
// blockDim = gridX * gridY * gridZ on the caller's stream.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "ascend_api.h"
#include "drivers.h"

namespace npl {
namespace {

rt::Api api;
bool loaded = false;
std::string load_error;

std::vector<std::string> library_list() {
  const char *env = std::getenv("NPU_LAUNCHER_CANN_LIBS");
  std::string s = env && *env ? env : "libascendcl.so:libruntime.so";
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool rt_fail(const Kernel *k, const char *what, int code) {
  return driver_fail(E_LAUNCH, "npu_launcher: kernel '%s': %s failed with CANN error 0x%x", k->name.c_str(), what,
                     (unsigned)code);
}

// (size, alignment) of each argument kind in triton-ascend's packed struct; size 0: none.
void field_of(int kind, uint32_t &size, uint32_t &align) {
  switch (kind) {
    case K_PTR: size = 8; align = 8; return;
    case K_I1: case K_I32: case K_U32: size = 4; align = 4; return;  // i1 is an int32_t
    case K_I8: size = 1; align = 4; return;
    case K_I16: size = 2; align = 4; return;
    case K_I64: case K_U64: case K_FP64: size = 8; align = 8; return;
    case K_FP16: case K_BF16: case K_FP32: size = 4; align = 4; return;  // passed as float
    default: size = 0; align = 0; return;  // u8/u16: triton-ascend has no C type for them
  }
}

uint32_t round_up(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

}  // namespace

std::vector<std::pair<std::string, std::string>> ascend_symbols() {
  return {
#define NPL_SIG(ret, name, params) {#name, #ret " " #name #params},
      NPL_ASCEND_FUNCTIONS(NPL_SIG)
#undef NPL_SIG
  };
}

bool ascend_load_api() {
  if (loaded) return true;
  if (load_error.empty()) {
    std::vector<void *> handles;
    std::string tried;
    for (const std::string &lib : library_list()) {
      void *h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (h) handles.push_back(h);
      else tried += std::string("\n  ") + dlerror();
    }
    if (handles.empty()) {
      load_error = "npu_launcher: ascend driver unavailable: no CANN runtime library could be "
                   "opened (is CANN installed and its lib64 on LD_LIBRARY_PATH?):" + tried;
    } else {
#define NPL_RESOLVE(ret, name, params)                                             \
  for (void *h : handles)                                                          \
    if (!api.name) api.name = (rt::name##_t)dlsym(h, #name);                       \
  if (!api.name && load_error.empty())                                             \
    load_error = "npu_launcher: ascend driver unavailable: CANN runtime lacks " #name;
      NPL_ASCEND_FUNCTIONS(NPL_RESOLVE)
#undef NPL_RESOLVE
    }
    if (load_error.empty()) loaded = true;
  }
  if (!loaded) {
    return driver_fail(E_DRIVER, "%s", load_error.c_str());
  }
  return true;
}

bool ascend_layout(const std::vector<int> &kinds, bool ffts, bool simt_only,
                   std::vector<uint32_t> &offsets, uint32_t &grid_offset, uint32_t &size,
                   int &bad_index) {
  uint32_t off = 0;
  if (ffts) off += 8;
  if (!simt_only) off += 16;  // syncBlockLock, workspace_addr
  offsets.clear();
  for (size_t i = 0; i < kinds.size(); ++i) {
    uint32_t fsize, falign;
    field_of(kinds[i], fsize, falign);
    if (!fsize) { bad_index = (int)i; return false; }
    off = round_up(off, falign);
    offsets.push_back(off);
    off += fsize;
  }
  grid_offset = round_up(off, 4);
  size = round_up(grid_offset + 12, 8);  // the struct is 8-aligned (pointer members)
  return true;
}

bool ascend_bind(Kernel *k, const char *binary, size_t size, const std::string &mix_mode,
                 const std::string &soc, int device) {
  std::vector<int> kinds;
  for (const ArgSpec &a : k->args) kinds.push_back(a.kind);
  int bad = -1;
  if (!ascend_layout(kinds, k->ascend.ffts, k->ascend.simt_only, k->ascend.offsets,
                     k->ascend.grid_offset, k->ascend.size, bad)) {
    return driver_fail(E_DESCRIPTOR,
                       "npu_launcher: kernel '%s': argument '%s' has type %s, which triton-ascend's "
                       "launcher cannot pass", k->name.c_str(), k->args[bad].name.c_str(),
                       k->args[bad].type.c_str());
  }
  if (!ascend_load_api()) return false;
  int r = api.aclrtSetDevice(device);
  if (r != 0) return rt_fail(k, "aclrtSetDevice", r);
  const char *have = api.aclrtGetSocName();
  if (!soc.empty() && (!have || soc != have)) {
    return driver_fail(E_DESCRIPTOR, "npu_launcher: kernel '%s' was compiled for %s but npu:%d is %s",
                       k->name.c_str(), soc.c_str(), device, have ? have : "unknown");
  }
  rt::rtDevBinary_t bin;
  bin.magic = mix_mode == "aiv" ? rt::RT_DEV_BINARY_MAGIC_ELF_AIVEC : rt::RT_DEV_BINARY_MAGIC_ELF;
  bin.version = 0;
  bin.data = binary;
  bin.length = size;
  void *handle = nullptr;
  r = api.rtDevBinaryRegister(&bin, &handle);
  if (r != rt::RT_ERROR_NONE) return rt_fail(k, "rtDevBinaryRegister", r);
  // The stub is any unique host address; its name must be unique per registration.
  static unsigned long counter = 0;
  void *stub = std::malloc(1);
  std::string stub_name = k->name + "_npl_" + std::to_string(counter++);
  r = api.rtFunctionRegister(handle, stub, stub_name.c_str(), k->name.c_str(), 0);
  if (r != rt::RT_ERROR_NONE) { std::free(stub); return rt_fail(k, "rtFunctionRegister", r); }
  k->ascend.bin_handle = handle;
  k->ascend.stub = stub;
  return true;
}

bool ascend_launch(Kernel *k, uint32_t grid[3], uint64_t stream, Slot *slots) {
  const AscendBinding &b = k->ascend;
  alignas(8) unsigned char buf[8 * (kMaxArgs + 8)];
  std::memset(buf, 0, b.size);
  if (b.ffts) {
    uint64_t addr = 0;
    uint32_t len = 0;
    int r = api.rtGetC2cCtrlAddr(&addr, &len);
    if (r != rt::RT_ERROR_NONE) return rt_fail(k, "rtGetC2cCtrlAddr", r);
    std::memcpy(buf, &addr, 8);
  }
  for (size_t i = 0; i < k->args.size(); ++i) {
    uint32_t fsize, falign;
    field_of(k->args[i].kind, fsize, falign);
    std::memcpy(buf + b.offsets[i], &slots[i], fsize);  // little-endian: low bytes first
  }
  int32_t g[3] = {(int32_t)grid[0], (int32_t)grid[1], (int32_t)grid[2]};
  std::memcpy(buf + b.grid_offset, g, sizeof g);
  int r = api.rtKernelLaunch(b.stub, grid[0] * grid[1] * grid[2], buf, b.size, nullptr,
                             (rt::rtStream_t)stream);
  if (r != rt::RT_ERROR_NONE) return rt_fail(k, "rtKernelLaunch", r);
  return true;
}

void ascend_release(Kernel *k) {
  // triton-ascend never unregisters a binary either; the stub must outlive the registration.
  k->ascend.stub = nullptr;
}

}  // namespace npl
