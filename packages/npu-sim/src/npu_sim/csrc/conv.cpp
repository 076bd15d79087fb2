// Convolution on npu. torch routes a PrivateUse1 convolution to convolution_overrideable and
// its gradient to convolution_backward_overrideable (ATen's _convolution picks the backend by
// device); we run the CPU convolution, which picks its own CPU backend, on CPU aliases through
// the fallback's runner (so a capture records it like any other op).
#include "sim.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/ConvUtils.h>
#include <torch/library.h>

namespace npu_sim {
namespace {

using Stack = torch::jit::Stack;

c10::OperatorHandle cpu_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
}

// The CPU convolution picks its output layout for its own backend (mkldnn: channels-last
// when the weight is); fake tensors predict the layout of the device's backend
// (ConvBackend::Overrideable, contiguous), and Inductor asserts the strides it predicted.
void to_overrideable_layout(const at::Tensor& input, const at::Tensor& weight, size_t outputs, Stack* stack) {
  const auto format = at::native::_determine_backend_memory_format(
      input, weight, at::native::ConvBackend::Overrideable);
  for (size_t i = stack->size() - outputs; i < stack->size(); ++i) {
    c10::IValue& v = (*stack)[i];
    if (v.isTensor() && v.toTensor().defined() && v.toTensor().dim() >= 4 &&
        !v.toTensor().is_contiguous(format)) {
      v = v.toTensor().contiguous(format);
    }
  }
}

// convolution_overrideable takes aten::convolution's arguments, in the same order.
void convolution_overrideable(const c10::OperatorHandle& op, Stack* stack) {
  static const c10::OperatorHandle convolution = cpu_op("aten::convolution");
  const size_t first = stack->size() - op.schema().arguments().size();
  const at::Tensor input = (*stack)[first].toTensor();
  const at::Tensor weight = (*stack)[first + 1].toTensor();
  run_on_cpu(convolution, stack);
  to_overrideable_layout(input, weight, 1, stack);
}

// convolution_backward_overrideable(grad_output, input, weight, stride, padding, dilation,
// transposed, output_padding, groups, output_mask) is aten::convolution_backward without
// bias_sizes (argument 3), which only shapes grad_bias: the bias has one value per output
// channel.
void convolution_backward_overrideable(const c10::OperatorHandle& op, Stack* stack) {
  static const c10::OperatorHandle backward = cpu_op("aten::convolution_backward");
  const size_t first = stack->size() - op.schema().arguments().size();
  const at::Tensor weight = (*stack)[first + 2].toTensor();  // a copy: the insert below moves the stack
  const bool transposed = (*stack)[first + 6].toBool();
  const int64_t groups = (*stack)[first + 8].toInt();
  const int64_t channels = transposed ? weight.size(1) * groups : weight.size(0);
  const at::Tensor input = (*stack)[first + 1].toTensor();
  stack->insert(stack->begin() + first + 3, c10::IValue(std::vector<int64_t>{channels}));
  run_on_cpu(backward, stack);
  to_overrideable_layout(input, weight, 3, stack);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", torch::CppFunction::makeFromBoxedFunction<&convolution_overrideable>());
  m.impl("convolution_backward_overrideable",
         torch::CppFunction::makeFromBoxedFunction<&convolution_backward_overrideable>());
}

}  // namespace npu_sim
