// Autocast on npu: torch.autocast("npu") enables the AutocastPrivateUse1 dispatch key, for which
// core torch registers no kernels. We register the policy lists ATen shares between backends
// (autocast_mode.h: the ops cast to the lower-precision dtype, kept in fp32, promoted), as
// CUDA, XPU and torch_npu register theirs, and let every other op fall through.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace npu_sim {
namespace {

// names the shared policy lists use unqualified (they are written for namespace at::autocast)
#if __has_include(<ATen/core/Dimname.h>)
using at::DimnameList;  // torch 2.11's lists name it unqualified (2.13 removed named tensors)
#endif
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

at::Tensor binary_cross_entropy_banned(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                       int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast on npu "
              "(as on cuda). Use torch.nn.functional.binary_cross_entropy_with_logits or torch.nn.BCEWithLogitsLoss, "
              "which are safe to autocast, or disable autocast around the loss.");
}

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define NPU_SIM_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
  AT_FORALL_LOWER_PRECISION_FP(NPU_SIM_LOWER_PRECISION_FP)
#define NPU_SIM_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
  AT_FORALL_FP32(NPU_SIM_FP32)
#define NPU_SIM_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
  AT_FORALL_FP32_SET_OPT_DTYPE(NPU_SIM_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
#define NPU_SIM_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_PROMOTE(NPU_SIM_PROMOTE)
  // as on cuda: binary_cross_entropy is unsafe to autocast (use the _with_logits form)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"),
         TORCH_FN(binary_cross_entropy_banned));
}

}  // namespace
}  // namespace npu_sim
