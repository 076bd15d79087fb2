"""The Ascend check's UB report: our estimates of a config's UB bytes (the tile generator's and
the body-aware model's), next to the bytes bishengir planned or required, per config and per
target, and the configs whose estimate is below bishengir's figure (check.py fails the run on
those that overflowed; README "UB agreement")."""

from __future__ import annotations

import statistics


def family(target: str) -> str:
    """The SoC family whose UB model prices a target: "950" or "910B"."""
    return "950" if target == "950" else "910B"


def ub_model_of(cap) -> dict:
    """What npu-lowering's UB model sees of the kernel."""
    sig = cap.triton_meta.get("signature", {})
    return {
        "pointers": [str(t) for t in sig.values() if str(t).startswith("*")],
        **{k: cap.inductor_meta.get(k) for k in ("num_load", "num_store", "num_reduction")},
    }


def ub_profile_of(source: str, cap, name, facts: dict) -> dict | None:
    """The body-aware UB model's profile of the kernel (npu_inductor_core.ub_model) as the
    heuristics size it: codegen's (in its inductor_meta), else the one read from ``source``;
    None when there is neither. Into ``facts`` (the kernel's ``ub_model`` report): where the
    profile came from and, for codegen's, whether the source reader finds the same one (the
    cross-check of the two front ends)."""
    from npu_inductor_core import ub_model

    try:
        from_source = ub_model.profile(
            source, ub_model.pointer_dtypes(cap.triton_meta.get("signature", {})), name=name
        )
    except Exception:  # noqa: BLE001 - the comparison is a report, never a check failure
        from_source = None
    from_codegen = cap.inductor_meta.get(ub_model.PROFILE_KEY)
    facts["profile_from"] = "codegen" if from_codegen is not None else "source"
    if from_codegen is None:
        return from_source
    facts["profile_agrees"] = from_codegen == from_source
    return from_codegen


def profile_agreement(results) -> dict:
    """How many kernels came with codegen's profile, and on how many the source reader agrees."""
    facts = [r.ub_model for r in results if r.ub_model]
    codegen = [f for f in facts if f.get("profile_from") == "codegen"]
    return {
        "kernels": len(facts),
        "codegen": len(codegen),
        "agree": sum(1 for f in codegen if f.get("profile_agrees")),
    }


def ub_estimate(cap, config) -> int | None:
    """The tile generator's estimate of the config's UB bytes before the body is read (its
    cap, ``tiles.ub_estimate``), with the multi-buffer setting it compiles with."""
    from npu_inductor_core import tiles

    return tiles.ub_estimate(
        dict(config.kwargs),
        cap.triton_meta,
        cap.inductor_meta,
        cap.size_hints,
        multibuffer=tiles.is_multibuffer(config),
    )


def body_estimates(profile: dict, config) -> tuple[dict, dict, list]:
    """The body model's figures of one config (ConfigResult's ``ub_body``, ``ub_apart``,
    ``ub_classes``): its peak estimate and its buffers each at its own address per SoC family,
    and its buffer bytes by class at each statement where the peak may fall."""
    from npu_inductor_core import ub_model

    kwargs = dict(config.kwargs)
    mb = bool(getattr(config, "num_stages", 1) and config.num_stages >= 2)
    families = ("910B", "950")
    return (
        {f: ub_model.estimate(profile, kwargs, multibuffer=mb, soc_family=f) for f in families},
        {f: ub_model.apart(profile, kwargs, multibuffer=mb, soc_family=f) for f in families},
        [{k: v for k, v in by.items() if v} for by in ub_model.class_bytes(profile, kwargs, mb)],
    )


def ub_comparison(results, target="910B2") -> list[dict]:
    """Per kernel and config: our UB estimate vs the bytes bishengir planned (or required)."""
    rows = []
    for r in results:
        for c in r.configs:
            t = c.targets.get(target) or {}
            theirs = t.get("ub_required_bytes") or t.get("ub_bytes")
            rows.append(
                {
                    "kernel": r.name,
                    "config": c.index,
                    "kwargs": c.kwargs,
                    "ours": c.ub_ours,
                    "ours_body": (c.ub_body or {}).get(family(target)),
                    "bishengir": theirs,
                    "available": t.get("ub_available_bytes"),
                    "fits": bool(t.get("ok")) and not t.get("retried_without_multibuffer"),
                    "retried_without_multibuffer": t.get("retried_without_multibuffer"),
                }
            )
    return rows


def _ours(c, x: dict, fam: str) -> int | None:
    """The body model's bound of what bishengir plans for the config (ub_model.plan_bound: the
    peak estimate the heuristics tile with, or the buffers apart while they fit the UB)."""
    from npu_inductor_core import ub_model

    peak = (c.ub_body or {}).get(fam)
    available = x.get("ub_available_bytes")
    if not peak or not available:
        return peak
    return ub_model.plan_bound(
        peak, (getattr(c, "ub_apart", None) or {}).get(fam) or peak, available
    )


def ub_below(results, targets, required_only: bool = False) -> list[str]:
    """Every config whose body-model bound (``_ours``) is below what bishengir planned, or
    whose peak estimate is below what bishengir required (an overflow; with ``required_only``
    those alone). An overflow the model said fits fails the run: the heuristics would size such
    a config past the UB. A plan above the bound that still fit is reported (the model misses
    buffers bishengir keeps, but nothing was sized wrong): refit ub_model's weights with
    bench/ub_model_calibration.py on the report, or widen its held-out margin."""
    out = []
    for r in results:
        for c in r.configs:
            for t in targets:
                x = c.targets.get(t.name) or {}
                if required_only and not x.get("ub_required_bytes"):
                    continue
                theirs = x.get("ub_required_bytes") or x.get("ub_bytes")
                ours = _ours(c, x, family(t.name))
                if theirs and not (ours and ours >= theirs):
                    out.append(
                        f"{r.name} cfg{c.index} {c.kwargs} [{t.name}]: ours {ours} < bishengir {theirs} ({r.path})"
                    )
    return out


def ub_agreement(results, targets) -> dict:
    """Per target: how the UB models compare with bishengir's figure (configs below it, median
    and lowest ratio to it: on kernels the weights were not fitted on, the lowest is the
    held-out figure the margin must cover): the pointer model, the body model's peak estimate
    (what the heuristics tile with) and its bound of the plan (``_ours``, which ub_below fails
    the run on)."""
    out = {}
    for t in targets:
        fam = family(t.name)
        rows = [
            (theirs, c.ub_ours, (c.ub_body or {}).get(fam), _ours(c, x, fam))
            for r in results
            for c in r.configs
            for x in [c.targets.get(t.name) or {}]
            for theirs in [x.get("ub_required_bytes") or x.get("ub_bytes")]
            if theirs
        ]
        row = {"configs": len(rows)}
        for i, label in ((1, "pointer_model"), (2, "body_model_peak"), (3, "body_model")):
            ratios = sorted(p[i] / p[0] for p in rows if p[i])
            if ratios:
                row[label] = {
                    "below": sum(1 for q in ratios if q < 1),
                    "median_ratio": round(statistics.median(ratios), 2),
                    "min_ratio": round(ratios[0], 3),
                }
        out[t.name] = row
    return out
