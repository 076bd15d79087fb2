"""npu-inductor-core: what every npu-inductor component shares and none owns.

- ``device``: device facts (SoC, vector/cube cores, the UB the compiler plans, flavour), read
  once from the provider of device "npu" (npu-sim or torch_npu) or from a kernel's metadata;
- ``ascend_rules``: facts of Ascend's compiler that several components' config generators obey;
- ``entries``: entry-point lookups components use to find each other (npu-sim's launch entry);
- ``compile_hooks``: contexts components run around upstream's ``compile_fx`` (one patch);
- ``triton_device``: npu as a Triton device in upstream's ``has_triton()`` (one patch);
- ``patches``: the registry of every upstream patch (``npu-inductor doctor --patches``);
- ``env_config``: environment defaults and checks for the components' torch config modules.

It depends on torch only; every component may depend on it. It holds no component logic.
"""
