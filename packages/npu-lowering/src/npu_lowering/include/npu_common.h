// What npu-lowering's generated C++ calls in both modes, the C++ wrapper of torch.compile
// (npu_cpp_wrapper.h) and AOTInductor's model code (npu_aoti.h):
//   npuTensorHandle            - a tensor argument as npu-launcher's C ABI takes it
//   NpuDeviceGuard             - c10's device guard for the npu device (PrivateUse1)
//   aoti_torch_npu_<op>        - the C shims of the extern kernels Inductor calls on npu
//   npu_direct_launcher        - npu-launcher's C ABI without Python, where kernels are
//                                triton-ascend's
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <type_traits>

#include <ATen/ops/addmm.h>
#include <ATen/ops/baddbmm.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/mm.h>
#include <c10/core/DeviceGuard.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>

// A tensor argument as the C ABI takes it (an AtenTensorHandle, not a data pointer: the sim
// driver hands the kernel a tensor, and the launch object checks device and dtype).
template <typename T>
static inline AtenTensorHandle npuTensorHandle(const T& t) {
  if constexpr (std::is_same_v<std::decay_t<T>, AtenTensorHandle>) {
    return t;
  } else {
    return t.get();
  }
}

class NpuDeviceGuard {
 public:
  explicit NpuDeviceGuard(int32_t index) : guard_(c10::Device(c10::DeviceType::PrivateUse1, index)) {}
  void set_index(int32_t index) { guard_.set_index(index); }

 private:
  c10::DeviceGuard guard_;
};

// npu-launcher's C ABI without Python (libnpu_launcher_direct.so), for code whose kernels are
// triton-ascend's (NPU_DIRECT_LAUNCH, defined by the generated header): $NPU_LAUNCHER_DIRECT_LIB,
// else the library of the npu-launcher that generated the code (NPU_DIRECT_LIBRARY), else the
// library's name on the loader's path (LD_LIBRARY_PATH). NULL with the reasons in why;
// NPU_LAUNCHER_DIRECT=0 refuses it.
static inline const NplCApi* npu_direct_launcher(std::string& why) {
  const char* off = std::getenv("NPU_LAUNCHER_DIRECT");
  if (off && std::string(off) == "0") {
    why = "NPU_LAUNCHER_DIRECT=0";
    return nullptr;
  }
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("NPU_LAUNCHER_DIRECT_LIB"); env && *env) candidates.push_back(env);
#ifdef NPU_DIRECT_LIBRARY
  candidates.push_back(NPU_DIRECT_LIBRARY);
#endif
  candidates.push_back(NPL_DIRECT_LIBRARY);
  for (const std::string& path : candidates) {
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* e = dlerror();
      why += std::string("\n  ") + (e ? e : path.c_str());
      continue;
    }
    auto get = reinterpret_cast<NplDirectApiFn>(dlsym(lib, NPL_DIRECT_SYMBOL));
    const NplCApi* api = get ? get() : nullptr;
    if (api != nullptr && api->version == NPL_CAPI_VERSION) return api;
    why += "\n  " + path + ": no " NPL_DIRECT_SYMBOL " of C ABI version " + std::to_string(NPL_CAPI_VERSION);
  }
  return nullptr;
}

// where the library was wanted but the capsule serves: slower, and Python is needed; said once
static inline void npu_direct_fallback_note(const char* who, const std::string& why) {
  if (why == "NPU_LAUNCHER_DIRECT=0") return;  // chosen
  std::fprintf(stderr, "%s: npu-launcher's Python-free library could not be opened (%s\n); kernels launch through its "
               "Python C ABI\n", who, why.c_str());
}

// ---- the C shim of the extern GEMM kernels Inductor calls with preallocated outputs ----
// (extern_kernels.mm/addmm/bmm/baddbmm: ExternKernelOut). upstream writes
// aoti_torch_<device>_<op>_out; cuda's are in libtorch_cuda, npu's are these: the ATen op
// through the dispatcher (npu-sim's or torch_npu's kernel). Other ATen fallbacks on npu go
// through upstream's runtime dispatch (cpp_wrapper.py).
#define NPU_SHIM_BEGIN try {
#define NPU_SHIM_END                 \
  }                                  \
  catch (const std::exception& e) {  \
    AOTI_TORCH_WARN(e.what());       \
    return AOTI_TORCH_FAILURE;       \
  }                                  \
  return AOTI_TORCH_SUCCESS;

static inline at::Tensor& npuT(AtenTensorHandle h) { return *torch::aot_inductor::tensor_handle_to_tensor_pointer(h); }

static inline AOTITorchError aoti_torch_npu_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  NPU_SHIM_BEGIN at::mm_out(npuT(out), npuT(self), npuT(mat2)); NPU_SHIM_END
}
static inline AOTITorchError aoti_torch_npu_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  NPU_SHIM_BEGIN at::bmm_out(npuT(out), npuT(self), npuT(mat2)); NPU_SHIM_END
}
static inline AOTITorchError aoti_torch_npu_addmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1,
                                                      AtenTensorHandle mat2, double beta, double alpha) {
  NPU_SHIM_BEGIN at::addmm_out(npuT(out), npuT(self), npuT(mat1), npuT(mat2), beta, alpha); NPU_SHIM_END
}
static inline AOTITorchError aoti_torch_npu_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                                        AtenTensorHandle batch1, AtenTensorHandle batch2, double beta,
                                                        double alpha) {
  NPU_SHIM_BEGIN at::baddbmm_out(npuT(out), npuT(self), npuT(batch1), npuT(batch2), beta, alpha); NPU_SHIM_END
}
// extern_kernels.convolution (conv's ATen choice, ExternKernelChoice "at::convolution"): the
// signature upstream's generated c_shim_cuda.h gives aoti_torch_cuda_convolution
static inline AOTITorchError aoti_torch_npu_convolution(AtenTensorHandle input, AtenTensorHandle weight,
                                                        AtenTensorHandle* bias, const int64_t* stride,
                                                        int64_t stride_len_, const int64_t* padding,
                                                        int64_t padding_len_, const int64_t* dilation,
                                                        int64_t dilation_len_, int32_t transposed,
                                                        const int64_t* output_padding, int64_t output_padding_len_,
                                                        int64_t groups, AtenTensorHandle* ret0) {
  NPU_SHIM_BEGIN
  std::optional<at::Tensor> b;
  if (bias != nullptr && *bias != nullptr) b = npuT(*bias);
  at::Tensor r = at::convolution(npuT(input), npuT(weight), b, c10::IntArrayRef(stride, stride_len_),
                                 c10::IntArrayRef(padding, padding_len_), c10::IntArrayRef(dilation, dilation_len_),
                                 transposed != 0, c10::IntArrayRef(output_padding, output_padding_len_), groups);
  *ret0 = torch::aot_inductor::new_tensor_handle(std::move(r));
  NPU_SHIM_END
}
