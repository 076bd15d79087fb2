// Normalizations, as a device runs them.
//
// - Their CompositeExplicitAutograd kernels would win over the boxed fallback for npu and differ
//   from the CPU kernels (native_layer_norm values up to 1.2e-4 apart in float32): registered
//   here, they run the CPU kernel through the fallback.
// - In float16/bfloat16 they follow the meta kernels of a non-CPU device (what fake tensors, and
//   so torch.compile, see; what cuda computes): float32 statistics (mean/rstd,
//   save_mean/save_invstd) and the normalized output rounded once from float32. The CPU kernel
//   keeps the statistics in the input's dtype and computes in it, so npu eager disagreed with
//   its own fake tensors and with compiled code. Low-precision tensor arguments are upcast,
//   the CPU kernel runs in float32, running statistics it updates are written back in their
//   own dtype, and each result takes the dtype the meta kernel gives it. A low-precision input
//   with float32 parameters (autocast's mix) works too, as on cuda; the CPU kernel refuses it.
// native_group_norm keeps the input's dtype for its statistics on every device (its meta
// kernel says so): the CPU kernel as it is.
#include "sim.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

namespace npu_sim {
namespace {

using Stack = torch::jit::Stack;

bool low_precision(const at::Tensor& t) {
  return t.defined() && (t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16);
}

// Runs `op` in float32 when argument `probe` is a low-precision tensor; result i then takes
// the dtype of argument cast_from[i] (-1: the float32 the kernel computed). Arguments the
// kernel writes are written back: those the schema marks, and `undeclared` (native_batch_norm
// updates its running statistics without saying so in its schema).
void run_in_float(const c10::OperatorHandle& op, Stack* stack, int probe, const std::vector<int>& cast_from,
                  const std::vector<int>& undeclared = {}) {
  const auto& args = op.schema().arguments();
  const size_t first = stack->size() - args.size();
  const c10::IValue& p = (*stack)[first + probe];
  if (!p.isTensor() || !low_precision(p.toTensor())) {
    run_on_cpu(op, stack);
    return;
  }
  std::vector<c10::optional<c10::ScalarType>> dtypes(args.size());
  std::vector<std::pair<at::Tensor, at::Tensor>> written;  // (argument, its float32 copy)
  for (size_t i = 0; i < args.size(); ++i) {
    c10::IValue& v = (*stack)[first + i];
    if (!v.isTensor()) continue;
    at::Tensor t = v.toTensor();
    if (!t.defined()) continue;
    dtypes[i] = t.scalar_type();
    if (!low_precision(t)) continue;
    at::Tensor up = t.to(at::kFloat);
    const c10::AliasInfo* alias = args[i].alias_info();
    const bool writes = (alias && alias->isWrite()) ||
                        std::find(undeclared.begin(), undeclared.end(), static_cast<int>(i)) != undeclared.end();
    if (writes) written.emplace_back(t, up);
    v = up;
  }
  run_on_cpu(op, stack);
  for (auto& [arg, up] : written) arg.copy_(up);
  const size_t nret = op.schema().returns().size();
  const size_t ret0 = stack->size() - nret;
  for (size_t k = 0; k < cast_from.size() && k < nret; ++k) {
    c10::IValue& r = (*stack)[ret0 + k];
    const int from = cast_from[k];
    if (from < 0 || !r.isTensor() || !dtypes[from]) continue;
    at::Tensor t = r.toTensor();
    if (t.defined() && t.scalar_type() != *dtypes[from]) r = t.to(*dtypes[from]);
  }
}

// (out, mean, rstd) of native_layer_norm(input, ...): out in the input's dtype
void layer_norm(const c10::OperatorHandle& op, Stack* s) { run_in_float(op, s, 0, {0, -1, -1}); }
// (out, save_mean, save_invstd[, reserve]) of the batch norms(input, weight, bias,
// running_mean, running_var, ...)
void batch_norm(const c10::OperatorHandle& op, Stack* s) { run_in_float(op, s, 0, {0, -1, -1, -1}, {3, 4}); }
// (grad_input, grad_weight, grad_bias) of native_layer_norm_backward(grad_out, input, shape,
// mean, rstd, weight, bias, mask)
void layer_norm_backward(const c10::OperatorHandle& op, Stack* s) { run_in_float(op, s, 1, {1, 5, 6}); }
// (grad_input, grad_weight, grad_bias) of the batch-norm backwards(grad_out, input, weight, ...)
void batch_norm_backward(const c10::OperatorHandle& op, Stack* s) { run_in_float(op, s, 1, {1, 2, 2}); }

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_layer_norm", torch::CppFunction::makeFromBoxedFunction<&layer_norm>());
  m.impl("native_layer_norm_backward", torch::CppFunction::makeFromBoxedFunction<&layer_norm_backward>());
  m.impl("native_batch_norm", torch::CppFunction::makeFromBoxedFunction<&batch_norm>());
  m.impl("_native_batch_norm_legit", torch::CppFunction::makeFromBoxedFunction<&batch_norm>());
  m.impl("_native_batch_norm_legit.no_stats", torch::CppFunction::makeFromBoxedFunction<&batch_norm>());
  m.impl("_batch_norm_with_update", torch::CppFunction::makeFromBoxedFunction<&batch_norm>());
  m.impl("native_batch_norm_backward", torch::CppFunction::makeFromBoxedFunction<&batch_norm_backward>());
  m.impl("batch_norm_backward", torch::CppFunction::makeFromBoxedFunction<&batch_norm_backward>());
  m.impl("native_group_norm", torch::CppFunction::makeFromBoxedFunction<&run_on_cpu>());
}

}  // namespace npu_sim
