"""K02 / K03 on npu in one fresh process (several compiles against one local cache dir):
``python cache_policy.py '{"case": "k02" | "k03"}'``; prints one JSON line of observations."""

import json
import sys

import torch

import npu_inductor

npu_inductor.enable()
from torch._dynamo.utils import counters  # noqa: E402
from torch._inductor import config  # noqa: E402

spec = json.loads(sys.argv[1])


@torch._dynamo.allow_in_graph
def scale_and_shift(x):
    # a user function Dynamo keeps in its graph: caches refuse it unless it is marked cacheable
    return x * 3 - 1


def uses_user_function(x):
    return torch.sin(scale_and_shift(x))


def branchy(x):
    # both branches compute the same graph; Dynamo guards on the size differ (s0 > 4 vs <= 4),
    # and those guards travel with the FX graph cache entry
    if x.shape[0] > 4:
        return torch.cos(x) * 2
    return torch.cos(x) * 2


def compile_once(fn, shape, dynamic=None):
    torch._dynamo.reset()
    counters.clear()
    x = torch.randn(*shape)
    out = torch.compile(fn, dynamic=dynamic)(x.to("npu"))
    return {
        "ok": bool(out.device.type == "npu" and torch.allclose(out.cpu(), fn(x), atol=1e-5)),
        "aot": dict(counters["aot_autograd"]),
        "inductor": dict(counters["inductor"]),
    }


report = {}
name = f"{scale_and_shift.__module__}.{scale_and_shift.__name__}"
if spec["case"] == "k02":
    report["unmarked"] = compile_once(uses_user_function, (4,))
    with config.patch(unsafe_marked_cacheable_functions={name: "v1"}):
        report["v1_first"] = compile_once(uses_user_function, (4,))
        report["v1_again"] = compile_once(uses_user_function, (4,))
    with config.patch(unsafe_marked_cacheable_functions={name: "v2"}):
        report["v2"] = compile_once(uses_user_function, (4,))
elif spec["case"] == "k03":
    from torch._inductor.utils import fresh_cache

    for skip in (False, True):
        # the AOTAutograd cache would answer first; this is about the FX graph cache's guards
        with (
            fresh_cache(),
            torch._functorch.config.patch(enable_autograd_cache=False),
            config.patch(unsafe_skip_cache_dynamic_shape_guards=skip),
        ):
            report[f"skip={skip}"] = {
                "large": compile_once(branchy, (8,), dynamic=True),
                "small": compile_once(branchy, (3,), dynamic=True),
            }
print(json.dumps(report))
