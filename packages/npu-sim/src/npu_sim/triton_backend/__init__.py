"""npu-sim's Triton backend plugin (entry point group ``triton.backends``): one compiler
class and one driver class, as Triton's own backends are. On a machine without a GPU,
Triton has no active driver; this one is active while the simulated npu is up and no real
GPU is, so Triton and Inductor can ask for a target, device, stream and benchmarker. It
never produces binaries: npu kernels run in Triton's interpreter (npu_sim.launch)."""
