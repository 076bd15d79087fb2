"""npu-graphtree's own settings (torch has no flag for these): a torch config module
(``install_config_module``), so ``npu_graphtree.config.patch(...)`` works. Defaults come from
the ``NPU_GRAPHTREE_*`` variables, read when this module is first imported. Read when used
(``time_replays``, read per replay, through ``_compat.fast_config_reader``, ~0.1 us). What the
tree reads from upstream's Inductor config is in ``upstream_config``. None of these changes
generated code (the trees run after the FX graph cache), so none is in its key.
"""

import sys

from npu_inductor_core import env_config as _env

# "user_visible": outputs the user holds are cloned out of the pool when a new generation begins; "none": invalidated
cudagraph_trees_generation_cloning: str = _env.text("NPU_GRAPHTREE_GENERATION_CLONING", "none")

# time every replay too (warmup and record are always timed); costs ~1 us per call
time_replays: bool = False

# check the pool's live blocks against our bookkeeping after each checkpoint restore
slow_asserts: bool = False

# live captured graphs per tree (device), least recently replayed evicted beyond it; 0: the
# device's budget (adapter.graph_budget: 1800 on Ascend, vllm-ascend's figure; none on cuda)
max_live_graphs: int = _env.integer("NPU_GRAPHTREE_MAX_LIVE_GRAPHS", 0)

_env.install(__name__)

GENERATION_CLONING = ("none", "user_visible")


def generation_cloning() -> str:
    """``cudagraph_trees_generation_cloning`` now, or ValueError naming the allowed values."""
    return _env.check(
        sys.modules[__name__],
        "cudagraph_trees_generation_cloning",
        GENERATION_CLONING.__contains__,
        f"one of {GENERATION_CLONING}",
        "NPU_GRAPHTREE_GENERATION_CLONING",
    )


def max_live_graphs_now() -> int:
    """``max_live_graphs`` now, or ValueError naming the variable."""
    return _env.check(
        sys.modules[__name__],
        "max_live_graphs",
        lambda v: _env.is_int(v, 0),
        "an integer >= 0",
        "NPU_GRAPHTREE_MAX_LIVE_GRAPHS",
    )
