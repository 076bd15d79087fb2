"""What generated npu code imports at run time: device helpers, math per Triton flavour,
and the heuristics decorators that build npu kernel objects."""
