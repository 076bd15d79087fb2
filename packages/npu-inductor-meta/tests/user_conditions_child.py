"""Child of test_user_conditions.py: compiles every reference model and every tiny
transformers model for inference, as a user does, and writes one JSON line per model.

    python user_conditions_child.py PHASE OUT.json

Upstream's defaults as shipped (nothing patched but what the phase names). PHASE "cold":
compile_threads=1 (no worker pool at all), under torch.no_grad() and then under
torch.inference_mode(). PHASE "warm": a new process on the Inductor cache the cold phase left,
with upstream's compile_threads. PHASE "pool": a new process on an empty cache with upstream's
compile_threads, so compiles meet a worker pool that is still starting (a subset of the models:
the reference ones and three transformers). The caller points TORCHINDUCTOR_CACHE_DIR at a
folder of its own per cache.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402  (the backend autoloads with torch)
from torch._dynamo.utils import counters  # noqa: E402
from torch._inductor import config  # noqa: E402

ATOL, RTOL = 1e-4, 1e-4
POOL_MODELS = {"transformer_block", "mlp8", "gpt2", "llama", "bert"}


def reference_models():
    from npu_inductor.reference_models import MLP8, TransformerBlock

    def block():
        torch.manual_seed(0)
        return TransformerBlock(64, 4).eval(), {"x": torch.randn(2, 16, 64)}

    def mlp8():
        torch.manual_seed(0)
        return MLP8(64, 2).eval(), {"input": torch.randn(4, 64)}

    def short_block():  # 8 rows in a 16-row GEMM tile: the epilogue's masks matter
        torch.manual_seed(0)
        return TransformerBlock(64, 4).eval(), {"x": torch.randn(2, 4, 64)}

    return [("transformer_block", block), ("transformer_block_2x4", short_block), ("mlp8", mlp8)]


def transformers_models():
    try:
        from npu_inductor.conformance import models as M
    except ImportError:
        return []

    def make(spec):
        def build():
            inputs = spec.inputs(spec.lengths[0])
            if spec.kind != "encoder-decoder":  # its labels make the decoder's inputs
                inputs.pop("labels", None)  # inference
            return spec.build(), inputs

        return build

    return [(spec.name, make(spec)) for spec in M.SPECS]


def first_tensor(out):
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "logits"):
        return out.logits
    if hasattr(out, "last_hidden_state"):
        return out.last_hidden_state
    return out[0]


def run_model(build, modes):
    model, inputs = build()
    model = model.to("npu")
    inputs = {k: v.to("npu") for k, v in inputs.items()}
    compiled = torch.compile(model)
    errors = {}
    for name, mode in modes:
        with mode():
            ref = first_tensor(model(**inputs))
            out = first_tensor(compiled(**inputs))
        assert out.device.type == "npu", out.device
        torch.testing.assert_close(
            out.cpu(), ref.cpu(), atol=ATOL, rtol=RTOL, msg=lambda m, n=name: f"{n}: {m}"
        )
        errors[name] = float((out.cpu() - ref.cpu()).abs().max())
    return errors


def main(phase: str, out_path: str) -> int:
    assert torch._C._get_privateuse1_backend_name() == "npu", "no device 'npu'"
    if phase == "cold":
        config.compile_threads = 1
        modes = [("no_grad", torch.no_grad), ("inference_mode", torch.inference_mode)]
    else:
        modes = [("no_grad", torch.no_grad)]
    models = reference_models() + transformers_models()
    if phase == "pool":
        models = [m for m in models if m[0] in POOL_MODELS]
    with open(out_path, "w") as out:
        for name, build in models:
            torch._dynamo.reset()
            counters.clear()
            row = {"model": name, "phase": phase, "compile_threads": config.compile_threads}
            try:
                row["max_abs_error"] = run_model(build, modes)
                row["ok"] = True
            except Exception as exc:  # noqa: BLE001 - reported per model
                row["ok"] = False
                row["error"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()[
                    -3000:
                ]
            row["fxgraph_cache_hit"] = counters["inductor"]["fxgraph_cache_hit"]
            row["fxgraph_cache_miss"] = counters["inductor"]["fxgraph_cache_miss"]
            out.write(json.dumps(row) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
