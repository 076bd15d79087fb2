// Fused scaled-dot-product-attention entry points on npu. scaled_dot_product_attention itself
// asks _fused_sdp_choice (the CPU rule, through the fallback) and runs CPU flash attention
// (_scaled_dot_product_flash_attention_for_cpu) or the math path. The CUDA-style entry points
// (efficient, flash) and the PrivateUse1 one (fused_attention_overrideable), which programs
// and decompositions call directly, have no CPU kernel: we compute them with CPU flash
// attention, called on the npu tensors (so the fallback runs it, or records it in a capture),
// and give each output the shape, dtype and layout of the entry point's meta kernel.
#include "sim.h"

#include <torch/library.h>

#include <cmath>

namespace npu_sim {
namespace {

using at::Tensor;

void check_supported(const char* op, const Tensor& q, double dropout_p, bool debug_mask = false) {
  TORCH_CHECK(q.dim() == 4, "npu-sim: ", op, " takes 4-d (batch, heads, seq, dim) inputs, got ", q.dim(), " dims");
  // CPU flash attention has no dropout, and these kernels' dropout masks are regenerated
  // from a philox seed at backward time, which a CPU generator cannot do
  TORCH_CHECK(dropout_p == 0.0, "npu-sim: ", op,
              " with dropout_p > 0 is not supported; call scaled_dot_product_attention (math path) instead");
  TORCH_CHECK(!debug_mask, "npu-sim: ", op, " with return_debug_mask=True is not supported (it has no dropout mask)");
}

c10::ScalarType accumulate_type(const Tensor& q) {
  return q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

// The log-sum-exp as the CPU flash backward reads it: (B, H, L) over a (B, L, H) buffer.
Tensor cpu_flash_lse(const Tensor& lse, const Tensor& q) {
  auto out = at::empty({q.size(0), q.size(2), q.size(1)}, q.options().dtype(accumulate_type(q))).transpose(1, 2);
  out.copy_(lse.narrow(2, 0, q.size(2)));
  return out;
}

Tensor zeros_long(const Tensor& q) { return at::zeros({}, q.options().dtype(at::kLong)); }

// Gradient of the additive attention bias, which CPU flash attention does not compute:
// dS = P * (dP - rowsum(dO * O)), P recomputed from the saved log-sum-exp.
Tensor bias_grad(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias,
                 const Tensor& out, const Tensor& lse, bool is_causal, std::optional<double> scale) {
  const auto acc = accumulate_type(q);
  const double s = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  auto scores = at::matmul(q.to(acc), k.to(acc).transpose(-2, -1)).mul_(s).add_(bias.to(acc));
  if (is_causal) {
    auto mask = at::ones({q.size(2), k.size(2)}, q.options().dtype(at::kBool)).triu_(1);
    scores.masked_fill_(mask, -std::numeric_limits<double>::infinity());
  }
  auto p = at::exp(scores.sub_(lse.narrow(2, 0, q.size(2)).to(acc).unsqueeze(-1)));
  auto go = grad_out.to(acc);
  auto dp = at::matmul(go, v.to(acc).transpose(-2, -1));
  auto rowsum = (go * out.to(acc)).sum(-1, /*keepdim=*/true);
  return (p * (dp - rowsum)).sum_to_size(bias.sizes()).to(bias.scalar_type());
}

// ---- efficient attention -----------------------------------------------------------------

std::tuple<Tensor, Tensor, Tensor, Tensor> efficient_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                                               const std::optional<Tensor>& attn_bias,
                                                               bool compute_log_sumexp, double dropout_p,
                                                               bool is_causal, std::optional<double> scale) {
  check_supported("_scaled_dot_product_efficient_attention", q, dropout_p);
  auto [attn, lse] = at::_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, is_causal, attn_bias, scale);
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), Ev = v.size(3);
  // meta: output (B, L, H, Ev) in memory, log-sum-exp float (B, H, L rounded up to 32) or empty
  auto out = at::empty({B, L, H, Ev}, q.options()).transpose(1, 2);
  out.copy_(attn);
  const int64_t lse_len = compute_log_sumexp ? (L + 31) / 32 * 32 : 0;
  auto lse_out = at::zeros({B, H, lse_len}, q.options().dtype(at::kFloat));
  if (compute_log_sumexp) lse_out.narrow(2, 0, L).copy_(lse);
  return {out, lse_out, zeros_long(q), zeros_long(q)};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> efficient_attention_backward(
    const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_bias,
    const Tensor& out, const Tensor& logsumexp, const Tensor& philox_seed, const Tensor& philox_offset,
    double dropout_p, std::array<bool, 4> grad_input_mask, bool is_causal, std::optional<double> scale) {
  check_supported("_scaled_dot_product_efficient_attention_backward", q, dropout_p);
  TORCH_CHECK(logsumexp.dim() == 3 && logsumexp.size(2) >= q.size(2),
              "npu-sim: _scaled_dot_product_efficient_attention_backward needs the forward's log-sum-exp "
              "(compute_log_sumexp=True)");
  std::optional<Tensor> bias = attn_bias.defined() ? std::optional<Tensor>(attn_bias) : std::nullopt;
  auto [gq, gk, gv] = at::_scaled_dot_product_flash_attention_for_cpu_backward(
      grad_out, q, k, v, out, cpu_flash_lse(logsumexp, q), 0.0, is_causal, bias, scale);
  Tensor gbias;
  if (grad_input_mask[3] && attn_bias.defined())
    gbias = bias_grad(grad_out, q, k, v, attn_bias, out, logsumexp, is_causal, scale);
  return {gq, gk, gv, gbias};
}

// ---- flash attention ---------------------------------------------------------------------

using FlashResult = std::tuple<Tensor, Tensor, Tensor, Tensor, c10::SymInt, c10::SymInt, Tensor, Tensor, Tensor>;

FlashResult flash_like(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                       const std::optional<Tensor>& attn_bias, double dropout_p, bool is_causal,
                       bool return_debug_mask, std::optional<double> scale, bool long_seed) {
  check_supported(op, q, dropout_p, return_debug_mask);
  auto [attn, lse] = at::_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, is_causal, attn_bias, scale);
  auto out = at::empty_like(q);  // meta: the query's layout
  out.copy_(attn);
  auto lse_out = at::empty({q.size(0), q.size(1), q.size(2)}, q.options().dtype(at::kFloat));
  lse_out.copy_(lse);
  // no dropout: the seed and offset are placeholders of the meta kernel's dtype and shape
  auto seed = long_seed ? zeros_long(q) : at::zeros({2}, q.options().dtype(at::kUInt64));
  auto offset = long_seed ? zeros_long(q) : at::zeros({}, q.options().dtype(at::kUInt64));
  return {out, lse_out, Tensor(), Tensor(), c10::SymInt(q.size(2)), c10::SymInt(k.size(2)),
          seed, offset, at::empty({0}, q.options())};
}

FlashResult flash_attention(const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p, bool is_causal,
                            bool return_debug_mask, std::optional<double> scale) {
  return flash_like("_scaled_dot_product_flash_attention", q, k, v, std::nullopt, dropout_p, is_causal,
                    return_debug_mask, scale, /*long_seed=*/false);
}

std::tuple<Tensor, Tensor, Tensor> flash_attention_backward(
    const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
    const Tensor& logsumexp, const Tensor& cum_seq_q, const Tensor& cum_seq_k, int64_t max_q, int64_t max_k,
    double dropout_p, bool is_causal, const Tensor& philox_seed, const Tensor& philox_offset,
    std::optional<double> scale) {
  check_supported("_scaled_dot_product_flash_attention_backward", q, dropout_p);
  return at::_scaled_dot_product_flash_attention_for_cpu_backward(grad_out, q, k, v, out, cpu_flash_lse(logsumexp, q),
                                                                  0.0, is_causal, std::nullopt, scale);
}

// ---- PrivateUse1's own fused entry point -------------------------------------------------

FlashResult fused_overrideable(const Tensor& q, const Tensor& k, const Tensor& v,
                               const std::optional<Tensor>& attn_bias, double dropout_p, bool is_causal,
                               bool return_debug_mask, std::optional<double> scale) {
  return flash_like("_scaled_dot_product_fused_attention_overrideable", q, k, v, attn_bias, dropout_p, is_causal,
                    return_debug_mask, scale, /*long_seed=*/true);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> fused_overrideable_backward(
    const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_bias,
    std::array<bool, 4> grad_input_mask, const Tensor& out, const Tensor& logsumexp, const Tensor& cum_seq_q,
    const Tensor& cum_seq_k, int64_t max_q, int64_t max_k, double dropout_p, bool is_causal,
    const Tensor& philox_seed, const Tensor& philox_offset, std::optional<double> scale) {
  check_supported("_scaled_dot_product_fused_attention_overrideable_backward", q, dropout_p);
  std::optional<Tensor> bias = attn_bias.defined() ? std::optional<Tensor>(attn_bias) : std::nullopt;
  auto [gq, gk, gv] = at::_scaled_dot_product_flash_attention_for_cpu_backward(
      grad_out, q, k, v, out, cpu_flash_lse(logsumexp, q), 0.0, is_causal, bias, scale);
  Tensor gbias;
  if (grad_input_mask[3] && attn_bias.defined())
    gbias = bias_grad(grad_out, q, k, v, attn_bias, out, logsumexp, is_causal, scale);
  return {gq, gk, gv, gbias};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_scaled_dot_product_efficient_attention", efficient_attention);
  m.impl("_scaled_dot_product_efficient_attention_backward", efficient_attention_backward);
  m.impl("_scaled_dot_product_flash_attention", flash_attention);
  m.impl("_scaled_dot_product_flash_attention_backward", flash_attention_backward);
  m.impl("_scaled_dot_product_fused_attention_overrideable", fused_overrideable);
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward", fused_overrideable_backward);
}

}  // namespace npu_sim
