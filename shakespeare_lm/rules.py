"""Decoding rules: pure functions that reshape next-token logits, ``(..., V) -> (..., V)``.

Each rule returns new logits (its input is never modified) in which filtered tokens are
``-inf``; at least one token always survives. Ties are broken deterministically: among
equal logits the lower token id ranks first. Invalid parameters raise ``ValueError``
naming the parameter, its value and the valid range.

``compose`` applies the rules in the documented order, the one used by Hugging Face
transformers' ``generate``:

    penalties (repetition, frequency, presence) -> temperature -> top-k -> top-p
    -> min-p -> typical -> epsilon -> eta

Truncation rules that come after temperature see the tempered distribution.
"""

from __future__ import annotations

import math

import torch

NEG_INF = float("-inf")


def _check(name: str, value, ok: bool, valid: str) -> None:
    if not ok:
        raise ValueError(f"{name}={value!r} is invalid: {name} must be {valid}")


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _sorted_desc(logits: torch.Tensor):
    """Logits sorted descending, ties by lower id first: (sorted values, their ids)."""
    return torch.sort(logits, dim=-1, descending=True, stable=True)


def _keep_sorted_prefix(logits: torch.Tensor, ids: torch.Tensor, keep_sorted: torch.Tensor):
    """Mask everything but the tokens whose sorted position is marked in keep_sorted."""
    keep_sorted[..., 0] = True  # the top token always survives
    keep = torch.zeros_like(keep_sorted).scatter(-1, ids, keep_sorted)
    return logits.masked_fill(~keep, NEG_INF)


def _entropy(logp: torch.Tensor) -> torch.Tensor:
    """Entropy in nats of each distribution, (..., V) log-probabilities -> (..., 1)."""
    p = logp.exp()
    return -(p * torch.where(p > 0, logp, torch.zeros_like(logp))).sum(-1, keepdim=True)


def temperature(logits: torch.Tensor, t: float) -> torch.Tensor:
    """Divide logits by t > 0: t < 1 sharpens, t > 1 flattens. Greedy is argmax, not t -> 0."""
    _check("temperature", t, _is_number(t) and t > 0,
           "a number > 0 (for greedy decoding use argmax: temperature=0 in generate)")
    return logits / t


def top_k(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the k most probable tokens (Fan et al. 2018)."""
    _check("top_k", k, isinstance(k, int) and not isinstance(k, bool) and k >= 1,
           "an integer >= 1")
    vals, ids = _sorted_desc(logits)
    keep = torch.zeros_like(vals, dtype=torch.bool)
    keep[..., : min(k, logits.shape[-1])] = True
    return _keep_sorted_prefix(logits, ids, keep)


def top_p(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Nucleus sampling (Holtzman et al. 2020): keep the smallest set of most probable
    tokens whose total probability reaches p, including the token that crosses p."""
    _check("top_p", p, _is_number(p) and 0 < p <= 1, "in (0, 1]")
    vals, ids = _sorted_desc(logits)
    probs = torch.softmax(vals, dim=-1)
    mass_before = torch.cumsum(probs, dim=-1) - probs
    return _keep_sorted_prefix(logits, ids, mass_before < p)


def min_p(logits: torch.Tensor, ratio: float) -> torch.Tensor:
    """Min-p (Nguyen et al. 2024): keep tokens with probability >= ratio * top probability."""
    _check("min_p", ratio, _is_number(ratio) and 0 <= ratio <= 1, "in [0, 1]")
    logp = torch.log_softmax(logits, dim=-1)
    threshold = logp.max(dim=-1, keepdim=True).values + math.log(ratio) if ratio > 0 else NEG_INF
    return logits.masked_fill(logp < threshold, NEG_INF)


def typical(logits: torch.Tensor, mass: float) -> torch.Tensor:
    """Locally typical sampling (Meister et al. 2023): rank tokens by |-log p - H|, the
    distance of their surprisal from the entropy, and keep the smallest such set whose
    probability reaches ``mass``. The most probable token can be dropped."""
    _check("typical_p", mass, _is_number(mass) and 0 < mass <= 1, "in (0, 1]")
    logp = torch.log_softmax(logits, dim=-1)
    distance = (-logp - _entropy(logp)).abs()
    distance = torch.where(torch.isfinite(logp), distance, torch.full_like(distance, math.inf))
    _, ids = torch.sort(distance, dim=-1, stable=True)
    probs = logp.exp().gather(-1, ids)
    mass_before = torch.cumsum(probs, dim=-1) - probs
    return _keep_sorted_prefix(logits, ids, mass_before < mass)


def epsilon(logits: torch.Tensor, eps: float) -> torch.Tensor:
    """Epsilon sampling (Hewitt et al. 2022): drop tokens with probability < eps."""
    _check("epsilon", eps, _is_number(eps) and 0 <= eps < 1, "in [0, 1)")
    logp = torch.log_softmax(logits, dim=-1)
    keep = logp >= math.log(eps) if eps > 0 else torch.ones_like(logp, dtype=torch.bool)
    keep |= logp == logp.max(dim=-1, keepdim=True).values
    return logits.masked_fill(~keep, NEG_INF)


def eta(logits: torch.Tensor, eps: float) -> torch.Tensor:
    """Eta sampling (Hewitt et al. 2022): drop p < eta, eta = min(eps, sqrt(eps) exp(-H))."""
    _check("eta", eps, _is_number(eps) and 0 <= eps < 1, "in [0, 1)")
    logp = torch.log_softmax(logits, dim=-1)
    if eps == 0:
        return logits.clone()
    threshold = torch.minimum(torch.full_like(logp[..., :1], eps),
                              math.sqrt(eps) * torch.exp(-_entropy(logp)))
    keep = (logp >= threshold.log()) | (logp == logp.max(dim=-1, keepdim=True).values)
    return logits.masked_fill(~keep, NEG_INF)


def _counts(history: torch.Tensor, vocab_size: int, dtype) -> torch.Tensor:
    """How often each token occurs in history (..., H) -> (..., V); ids < 0 (padding) ignored."""
    counts = torch.zeros(*history.shape[:-1], vocab_size, dtype=dtype, device=history.device)
    return counts.scatter_add_(-1, history.clamp(min=0), (history >= 0).to(dtype))


def repetition_penalty(logits: torch.Tensor, history: torch.Tensor, penalty: float) -> torch.Tensor:
    """CTRL penalty (Keskar et al. 2019) on tokens already in ``history`` (..., H):
    positive logits are divided by ``penalty``, negative ones multiplied, so > 1 discourages."""
    _check("repetition_penalty", penalty, _is_number(penalty) and penalty > 0, "a number > 0")
    seen = _counts(history, logits.shape[-1], logits.dtype) > 0
    penalised = torch.where(logits > 0, logits / penalty, logits * penalty)
    return torch.where(seen, penalised, logits)


def frequency_penalty(logits: torch.Tensor, history: torch.Tensor, alpha: float) -> torch.Tensor:
    """Subtract alpha times each token's count in ``history`` (OpenAI's frequency penalty)."""
    _check("frequency_penalty", alpha, _is_number(alpha), "a finite number")
    return logits - alpha * _counts(history, logits.shape[-1], logits.dtype)


def presence_penalty(logits: torch.Tensor, history: torch.Tensor, alpha: float) -> torch.Tensor:
    """Subtract alpha from every token that occurs in ``history`` at least once."""
    _check("presence_penalty", alpha, _is_number(alpha), "a finite number")
    return logits - alpha * (_counts(history, logits.shape[-1], logits.dtype) > 0).to(logits.dtype)


ORDER = ("repetition_penalty", "frequency_penalty", "presence_penalty", "temperature",
         "top_k", "top_p", "min_p", "typical_p", "epsilon", "eta")
_PENALTIES = {"repetition_penalty": repetition_penalty, "frequency_penalty": frequency_penalty,
              "presence_penalty": presence_penalty}
_TRUNCATIONS = {"temperature": temperature, "top_k": top_k, "top_p": top_p, "min_p": min_p,
                "typical_p": typical, "epsilon": epsilon, "eta": eta}


def validate(**settings) -> dict:
    """Check every setting once (unknown names and bad values raise); drop the Nones."""
    unknown = set(settings) - set(ORDER)
    if unknown:
        raise TypeError(f"unknown decoding rule(s) {sorted(unknown)}; known: {list(ORDER)}")
    probe = torch.zeros(1, 2)
    history = torch.zeros(1, 1, dtype=torch.long)
    for name, value in settings.items():
        if value is None:
            continue
        if name in _PENALTIES:
            _PENALTIES[name](probe, history, value)
        elif name == "temperature" and _is_number(value) and value == 0:
            continue  # greedy
        else:
            _TRUNCATIONS[name](probe, value)
    return {k: v for k, v in settings.items() if v is not None}


def compose(logits: torch.Tensor, history: torch.Tensor | None = None, **settings) -> torch.Tensor:
    """Apply every given rule in ``ORDER``; None (or temperature 0, greedy) skips a rule.

    ``history`` (..., H) are the token ids seen so far, needed by the penalties.
    """
    out = logits
    for name in ORDER:
        value = settings.get(name)
        if value is None or (name == "temperature" and value == 0):
            continue
        if name in _PENALTIES:
            if history is None:
                raise ValueError(f"{name} needs the history of token ids")
            if history.shape[-1] > 0:
                out = _PENALTIES[name](out, history, value)
        else:
            out = _TRUNCATIONS[name](out, value)
    unknown = set(settings) - set(ORDER)
    if unknown:
        raise TypeError(f"unknown decoding rule(s) {sorted(unknown)}; known: {list(ORDER)}")
    return out


def sample(logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw one token per row from softmax(logits) (B, V) -> (B,)."""
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def greedy(logits: torch.Tensor) -> torch.Tensor:
    """The most probable token per row (lowest id among ties) (B, V) -> (B,)."""
    return logits.argmax(dim=-1)
