// Convolution on npu. torch routes a PrivateUse1 convolution to convolution_overrideable and
// its gradient to convolution_backward_overrideable (ATen's _convolution picks the backend by
// device); we run the CPU convolution, which picks its own CPU backend, on CPU aliases through
// the fallback's runner (so a capture records it like any other op).
#include "sim.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace npu_sim {
namespace {

using Stack = torch::jit::Stack;

c10::OperatorHandle cpu_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
}

// convolution_overrideable takes aten::convolution's arguments, in the same order.
void convolution_overrideable(const c10::OperatorHandle&, Stack* stack) {
  static const c10::OperatorHandle convolution = cpu_op("aten::convolution");
  run_on_cpu(convolution, stack);
}

// convolution_backward_overrideable(grad_output, input, weight, stride, padding, dilation,
// transposed, output_padding, groups, output_mask) is aten::convolution_backward without
// bias_sizes (argument 3), which only shapes grad_bias: the bias has one value per output
// channel.
void convolution_backward_overrideable(const c10::OperatorHandle& op, Stack* stack) {
  static const c10::OperatorHandle backward = cpu_op("aten::convolution_backward");
  const size_t first = stack->size() - op.schema().arguments().size();
  const at::Tensor& weight = (*stack)[first + 2].toTensor();
  const bool transposed = (*stack)[first + 6].toBool();
  const int64_t groups = (*stack)[first + 8].toInt();
  const int64_t channels = transposed ? weight.size(1) * groups : weight.size(0);
  stack->insert(stack->begin() + first + 3, c10::IValue(std::vector<int64_t>{channels}));
  run_on_cpu(backward, stack);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", torch::CppFunction::makeFromBoxedFunction<&convolution_overrideable>());
  m.impl("convolution_backward_overrideable",
         torch::CppFunction::makeFromBoxedFunction<&convolution_backward_overrideable>());
}

}  // namespace npu_sim
