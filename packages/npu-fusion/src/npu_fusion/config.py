"""npu-fusion's settings, a torch config module: read and patch them as Inductor's
(``npu_fusion.config.patch(ub_rule=False)``, ``npu_fusion.config.min_tile_elems = 512``).

They reach the FX graph cache key through ``npu_fusion.policy.cache_key()``, which npu's
post-grad pass puts into its uuid, so a changed setting never serves code fused under another.
"""

from npu_inductor_core import env_config as _env

# Refuse an npu fusion whose UB footprint cannot fit the unified buffer (README, "The rule").
ub_rule: bool = _env.flag("NPU_FUSION_UB_RULE", True)

# Smallest tile, in elements per buffer, that keeps Ascend's DMA efficient (README).
min_tile_elems: int = 1024

# Price loaded buffers twice: the autotuner tries every config with multi-buffering on.
multibuffer: bool = True

# Order candidate npu fusions by GM bytes saved, a removed round trip counted twice (README).
prefer_round_trips: bool = True

# Upstream's combo kernels on npu graphs where the user left Inductor's flag alone (README).
combo_kernels: bool = _env.flag("NPU_FUSION_COMBO_KERNELS", True)

# Two concatenated halves that read a common tensor (RoPE's rotated half) computed over the
# full width, so no load has a negative offset, which Ascend's compiler refuses (README).
half_cat: bool = _env.flag("NPU_FUSION_HALF_CAT", True)

# In npu training compiles, rows gathered from a graph input (RoPE's cos/sin at the tokens'
# positions) are recomputed in the backward rather than saved by the forward (README).
recompute_gathers: bool = True

# A pointwise value that a norm backward's row reduction and its weight's column reduction both
# read, recomputed for the column reduction instead of stored in float32 and read back (README).
recompute_norm_inputs: bool = True

_env.install(
    __name__,
    {
        "ub_rule": (_env.is_bool, "True or False", "NPU_FUSION_UB_RULE"),
        "combo_kernels": (_env.is_bool, "True or False", "NPU_FUSION_COMBO_KERNELS"),
        "half_cat": (_env.is_bool, "True or False", "NPU_FUSION_HALF_CAT"),
    },
)
