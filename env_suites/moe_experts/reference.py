"""Routed experts of a mixture-of-experts layer, forward and backward: inputs and fp32 reference.

``y[t] = sum_k w[t, k] * W2[e] (silu(W1[e] x[t]) * (W3[e] x[t]))`` with ``e = topk_ids[t, k]``,
and the gradients of ``sum(y * dy)`` with respect to x, W1, W3, W2 and the routing weights.

Inputs (``make_inputs``), fresh per call: routing of the size's skew kind (``Z``): 0 uniform,
1 Zipf-skewed over a random ranking of the experts, 2 one expert taking a quarter of all
routes and an eighth of the experts taking none. Each token's K experts are distinct. x, dy
and the weights are unit-scale rows over sqrt(D) (or sqrt(F)), so the projections are O(1):
SiLU is neither saturated nor linear, and the weights are fresh, as after an optimizer step.

Reference (``forward_backward``): expert by expert, over the routes to it, in fp32. Peak
memory: the largest expert's routes times (2F + 2D) fp32 activations and their gradients,
plus fp32 copies of its three weight matrices; the fp32 gradients of all weights
(3 x E x F x D x 4 B: 2.4 GB at E=128, F=768, D=2048).
"""

from __future__ import annotations

import math

import torch

ZIPF_EXPONENT = 1.2
HOT_SHARE, EMPTY_SHARE = 0.25, 0.125


def _expert_scores(experts: int, skew: int, g: dict) -> torch.Tensor:
    """Positive per-expert weights of the routing distribution."""
    if skew == 0:
        return torch.ones(experts, device=g["device"])
    ranks = torch.randperm(experts, **g).float() + 1
    if skew == 1:
        return ranks ** -ZIPF_EXPONENT
    scores = torch.ones(experts, device=g["device"])
    scores[ranks <= max(1, int(EMPTY_SHARE * experts))] = 0.0  # empty experts
    return scores


def route(tokens: int, experts: int, k: int, skew: int, generator: torch.Generator) -> torch.Tensor:
    """int32 [T, K] distinct experts per token."""
    g = {"generator": generator, "device": generator.device}
    scores = _expert_scores(experts, skew, g)
    if int((scores > 0).sum()) < k:
        scores = torch.ones(experts, device=g["device"])
    ids = torch.multinomial(scores.expand(tokens, experts), k, replacement=False, generator=generator)
    if skew == 2 and experts > k:
        # One expert (among those with routes) takes HOT_SHARE of the tokens in their first slot.
        hot = int(torch.multinomial(scores, 1, generator=generator))
        taken = torch.rand(tokens, **g) < HOT_SHARE
        has = (ids == hot).any(1)
        ids[taken & ~has, 0] = hot
    return ids.to(torch.int32)


def make_inputs(dims, generator: torch.Generator, device: torch.device) -> dict:
    t, e, k, d, f, skew = (dims[n] for n in ("T", "E", "K", "D", "F", "Z"))
    g = {"generator": generator, "device": generator.device}
    topk_ids = route(t, e, k, skew, generator)
    logits = torch.randn(t, k, **g)
    topk_weights = torch.softmax(logits, dim=-1)  # a softmax over the chosen experts, as Qwen3 renormalises

    def bf16(*shape, fan_in):
        return (torch.randn(*shape, **g) / math.sqrt(fan_in)).to(torch.bfloat16)

    return {"x": bf16(t, d, fan_in=1).to(device), "topk_ids": topk_ids.to(device),
            "topk_weights": topk_weights.to(device),
            "w1": bf16(e, f, d, fan_in=d).to(device), "w3": bf16(e, f, d, fan_in=d).to(device),
            "w2": bf16(e, d, f, fan_in=f).to(device), "dy": bf16(t, d, fan_in=1).to(device)}


def forward_backward(x, topk_ids, topk_weights, w1, w3, w2, dy, rounded: bool = False):
    """fp32 (y, dx, dw1, dw3, dw2, dtopk_weights, dtopk_scale). ``dtopk_scale``: per route,
    ||out|| ||dy|| / sqrt(D), the root-mean-square size of a dot product of two vectors of
    these lengths in independent directions: the size of the terms dtopk_weights sums, which
    an honest kernel's rounding error is proportional to however much they cancel.
    ``rounded``: round to bf16 wherever a layer of bf16 ops rounds (the expert: every GEMM's
    output, SiLU's output and each product, the sum of dx over a token's routes), so the
    result carries an honest unfused kernel's rounding (``Environment.rounded_reference``); a
    fused kernel rounds less.
    """
    cast = (lambda z: z.to(torch.bfloat16).float()) if rounded else (lambda z: z)
    t, d = x.shape
    experts = w1.shape[0]
    y = torch.zeros(t, d, dtype=torch.float32, device=x.device)
    dx = torch.zeros_like(y)
    dw1, dw3, dw2 = (torch.zeros(w.shape, dtype=torch.float32, device=x.device) for w in (w1, w3, w2))
    dweights = torch.zeros(topk_weights.shape, dtype=torch.float32, device=x.device)
    dscale = torch.zeros_like(dweights)
    flat = topk_ids.reshape(-1).long()
    for e in range(experts):
        routes = (flat == e).nonzero().squeeze(1)
        if routes.numel() == 0:
            continue
        token, slot = routes // topk_ids.shape[1], routes % topk_ids.shape[1]
        xs, g = x[token].float(), dy[token].float()
        we = topk_weights[token, slot].float()[:, None]
        a1, a3, a2 = w1[e].float(), w3[e].float(), w2[e].float()
        h1, h3 = cast(xs @ a1.t()), cast(xs @ a3.t())
        s = torch.sigmoid(h1)
        silu = cast(h1 * s)
        act = cast(silu * h3)
        out = cast(act @ a2.t())
        y.index_add_(0, token, we * out)
        dweights[token, slot] = (out * g).sum(1)
        dscale[token, slot] = out.norm(dim=1) * g.norm(dim=1) / math.sqrt(d)
        d_out = cast(we * g)
        dw2[e] = d_out.t() @ act
        d_act = cast(d_out @ a2)
        dh3 = cast(d_act * silu)
        dh1 = cast(cast(d_act * h3) * s * (1 + h1 * (1 - s)))
        dw1[e], dw3[e] = dh1.t() @ xs, dh3.t() @ xs
        dx[token] = cast(dx[token] + cast(cast(dh1 @ a1) + cast(dh3 @ a3)))  # a token's experts are distinct
    return tuple(cast(o) for o in (y, dx, dw1, dw3, dw2)) + (dweights, dscale)
