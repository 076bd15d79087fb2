"""The choices-object hook of npu's fusion policy: the order of candidate fusions.

Upstream's scheduler sorts candidate fusions by ``V.choices.score_fusion``; the device's
scheduling (where the policy's ``can_fuse`` is asked) has no say in that order. ``NpuChoices``
(numerics.py, Inductor's ``inductor_choices_class`` when the user set none) takes this mixin:
it asks the installed policy (entry point ``npu_inductor.fusion: policy``, npu-fusion) for
``score_fusion(scheduler, node1, node2, upstream_score)`` when it has one; the policy decides
which pairs it reorders (npu-fusion: npu pairs only). Without a policy, upstream's score.
"""

from __future__ import annotations

from torch._inductor.choices import InductorChoices

from .runtime.entries import fusion_policy


class FusionChoices(InductorChoices):
    @staticmethod
    def score_fusion(scheduler, node1, node2):
        upstream = InductorChoices.score_fusion(scheduler, node1, node2)
        hook = getattr(fusion_policy(), "score_fusion", None)
        return upstream if hook is None else hook(scheduler, node1, node2, upstream)
