"""Decoding rules: pure functions that reshape next-token logits, ``(..., V) -> (..., V)``.

Each rule returns new logits (its input is never modified) in which filtered tokens are
``-inf``; at least one token always survives. Ties are broken deterministically: among
equal logits the lower token id ranks first, so ``top_k(l, 1)`` keeps exactly the token
that ``greedy`` (argmax) picks. Invalid parameters raise ``ValueError`` naming the
parameter, its value and the valid range. The thresholds are computed in float64 (where the
device has it), so a rule decides the same way as the book's pages, whose one JavaScript
copy of these rules is ``shakespeare_lm/site/static/decoding.js``; a value within ``TOL`` of
a threshold counts as reaching it.

``compose`` applies the rules in the documented order, the one used by Hugging Face
transformers' ``generate``:

    penalties (repetition, frequency, presence) -> temperature -> top-k -> top-p
    -> min-p -> typical -> epsilon -> eta

Every truncation rule after temperature sees the tempered (and already truncated)
distribution: a filter renormalises what it keeps before the next one looks at it.
"""

from __future__ import annotations

import math
import numbers

import torch

NEG_INF = float("-inf")
# A running total within TOL of p, or a log-probability within TOL of a log threshold, counts
# as reaching it, so a textbook tie such as min-p 0.3 on (0.50, 0.25, 0.15, 0.10) is decided
# by the maths, not by the last bit of a float. Far below any gap between real probabilities.
TOL = 1e-12


def _check(name: str, value, ok: bool, valid: str) -> None:
    if not ok:
        raise ValueError(f"{name}={value!r} is invalid: {name} must be {valid}")


def _is_number(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def _is_integer(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _logprobs(logits: torch.Tensor) -> torch.Tensor:
    """log softmax in float64 (float32 on Apple's MPS, which has no float64)."""
    x = logits if logits.device.type == "mps" else logits.double()
    return torch.log_softmax(x, dim=-1)


def _sorted_desc(logits: torch.Tensor):
    """Logits sorted descending, ties by lower id first: (sorted values, their ids)."""
    return torch.sort(logits, dim=-1, descending=True, stable=True)


def _keep_sorted_prefix(logits: torch.Tensor, ids: torch.Tensor, keep_sorted: torch.Tensor):
    """Mask every token but those whose position in the order ``ids`` is marked in
    ``keep_sorted``; the first token of the order always survives."""
    keep_sorted[..., 0] = True
    keep = torch.zeros_like(keep_sorted).scatter(-1, ids, keep_sorted)
    return logits.masked_fill(~keep, NEG_INF)


def _keep_top(logits: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Mask the tokens not marked in ``keep``, except the most probable one(s)."""
    keep = keep | (logits == logits.max(dim=-1, keepdim=True).values)
    return logits.masked_fill(~keep, NEG_INF)


def _entropy(logp: torch.Tensor) -> torch.Tensor:
    """Entropy in nats of each distribution, (..., V) log-probabilities -> (..., 1)."""
    p = logp.exp()
    return -(p * torch.where(p > 0, logp, torch.zeros_like(logp))).sum(-1, keepdim=True)


def entropy_bits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy in bits of softmax(logits), (..., V) -> (...); -inf entries count as zero."""
    return _entropy(_logprobs(logits)).squeeze(-1) / math.log(2)


def temperature(logits: torch.Tensor, t: float) -> torch.Tensor:
    """Divide logits (..., V) by t > 0: t < 1 sharpens, t > 1 flattens, the order of the
    tokens never changes (Ackley et al. 1985). Greedy is argmax, not t -> 0."""
    _check("temperature", t, _is_number(t) and t > 0,
           "a number > 0 (for greedy decoding use argmax: temperature=0 in generate)")
    return logits / t


def top_k(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep exactly the k most probable tokens of (..., V), ties to the lower id
    (Fan et al. 2018); k >= V keeps everything."""
    _check("top_k", k, _is_integer(k) and k >= 1, "an integer >= 1")
    k = int(k)
    if k >= logits.shape[-1]:
        return logits.clone()
    _, ids = _sorted_desc(logits)
    keep = torch.zeros_like(ids, dtype=torch.bool)
    keep[..., :k] = True
    return _keep_sorted_prefix(logits, ids, keep)


def top_p(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Nucleus sampling (Holtzman et al. 2020) on (..., V): keep the smallest set of most
    probable tokens whose total probability reaches p, including the token that crosses p.
    p = 1 keeps everything."""
    _check("top_p", p, _is_number(p) and 0 < p <= 1, "in (0, 1]")
    if p == 1:
        return logits.clone()
    _, ids = _sorted_desc(logits)
    probs = _logprobs(logits).exp().gather(-1, ids)
    mass_before = torch.cumsum(probs, dim=-1) - probs  # mass of the tokens ranked above
    return _keep_sorted_prefix(logits, ids, mass_before < p - TOL)


def min_p(logits: torch.Tensor, ratio: float) -> torch.Tensor:
    """Min-p (Nguyen et al. 2024) on (..., V): keep tokens with probability
    >= ratio * (the top token's probability). ratio = 0 keeps everything."""
    _check("min_p", ratio, _is_number(ratio) and 0 <= ratio <= 1, "in [0, 1]")
    if ratio == 0:
        return logits.clone()
    logp = _logprobs(logits)
    threshold = logp.max(dim=-1, keepdim=True).values + math.log(ratio)
    return _keep_top(logits, logp >= threshold - TOL)


def typical(logits: torch.Tensor, mass: float) -> torch.Tensor:
    """Locally typical sampling (Meister et al. 2023) on (..., V): rank tokens by
    |-log p - H|, the distance of their surprisal from the entropy H, and keep the smallest
    such prefix whose probability reaches ``mass`` (the crossing token included). The most
    probable token can be dropped. mass = 1 keeps everything."""
    _check("typical_p", mass, _is_number(mass) and 0 < mass <= 1, "in (0, 1]")
    if mass == 1:
        return logits.clone()
    logp = _logprobs(logits)
    distance = (-logp - _entropy(logp)).abs()
    distance = torch.where(torch.isfinite(logp), distance, torch.full_like(distance, math.inf))
    _, ids = torch.sort(distance, dim=-1, stable=True)  # most typical first, ties to lower id
    probs = logp.exp().gather(-1, ids)
    mass_before = torch.cumsum(probs, dim=-1) - probs
    return _keep_sorted_prefix(logits, ids, mass_before < mass - TOL)


def epsilon(logits: torch.Tensor, eps: float) -> torch.Tensor:
    """Epsilon sampling (Hewitt et al. 2022) on (..., V): drop tokens with probability
    < eps (the most probable token always stays). eps = 0 keeps everything."""
    _check("epsilon", eps, _is_number(eps) and 0 <= eps < 1, "in [0, 1)")
    if eps == 0:
        return logits.clone()
    return _keep_top(logits, _logprobs(logits) >= math.log(eps) - TOL)


def eta_threshold(logits: torch.Tensor, eps: float) -> torch.Tensor:
    """The eta of eta sampling, min(eps, sqrt(eps) * exp(-H)) with H in nats: (..., V) -> (...)."""
    _check("eta", eps, _is_number(eps) and 0 <= eps < 1, "in [0, 1)")
    h = _entropy(_logprobs(logits)).squeeze(-1)
    return torch.clamp(math.sqrt(eps) * torch.exp(-h), max=eps)


def eta(logits: torch.Tensor, eps: float) -> torch.Tensor:
    """Eta sampling (Hewitt et al. 2022) on (..., V): drop tokens with probability < eta,
    eta = min(eps, sqrt(eps) * exp(-H)), H the entropy in nats; a flatter distribution
    gets a lower threshold. eps = 0 keeps everything."""
    threshold = eta_threshold(logits, eps)
    if eps == 0:
        return logits.clone()
    return _keep_top(logits, _logprobs(logits) >= threshold.log().unsqueeze(-1) - TOL)


def _counts(history: torch.Tensor, vocab_size: int, dtype) -> torch.Tensor:
    """How often each token occurs in history (..., H) -> (..., V); ids < 0 (padding) ignored."""
    counts = torch.zeros(*history.shape[:-1], vocab_size, dtype=dtype, device=history.device)
    return counts.scatter_add_(-1, history.clamp(min=0), (history >= 0).to(dtype))


def repetition_penalty(logits: torch.Tensor, history: torch.Tensor, penalty: float) -> torch.Tensor:
    """CTRL's penalty (Keskar et al. 2019) on logits (..., V) for the tokens in ``history``
    (..., H), as in Hugging Face: positive logits are divided by ``penalty``, negative ones
    multiplied, so penalty > 1 discourages repeats whatever the logit's sign."""
    _check("repetition_penalty", penalty, _is_number(penalty) and penalty > 0, "a number > 0")
    seen = _counts(history, logits.shape[-1], logits.dtype) > 0
    penalised = torch.where(logits > 0, logits / penalty, logits * penalty)
    return torch.where(seen, penalised, logits)


def frequency_penalty(logits: torch.Tensor, history: torch.Tensor, alpha: float) -> torch.Tensor:
    """OpenAI's frequency penalty on logits (..., V): subtract alpha times each token's
    count in ``history`` (..., H)."""
    _check("frequency_penalty", alpha, _is_number(alpha), "a finite number")
    return logits - alpha * _counts(history, logits.shape[-1], logits.dtype)


def presence_penalty(logits: torch.Tensor, history: torch.Tensor, alpha: float) -> torch.Tensor:
    """OpenAI's presence penalty on logits (..., V): subtract alpha once from every token
    that occurs in ``history`` (..., H)."""
    _check("presence_penalty", alpha, _is_number(alpha), "a finite number")
    return logits - alpha * (_counts(history, logits.shape[-1], logits.dtype) > 0).to(logits.dtype)


ORDER = ("repetition_penalty", "frequency_penalty", "presence_penalty", "temperature",
         "top_k", "top_p", "min_p", "typical_p", "epsilon", "eta")
PENALTIES = {"repetition_penalty": repetition_penalty, "frequency_penalty": frequency_penalty,
              "presence_penalty": presence_penalty}
TRUNCATIONS = {"temperature": temperature, "top_k": top_k, "top_p": top_p, "min_p": min_p,
                "typical_p": typical, "epsilon": epsilon, "eta": eta}


def _check_names(settings: dict) -> None:
    unknown = set(settings) - set(ORDER)
    if unknown:
        raise TypeError(f"unknown decoding rule(s) {sorted(unknown)}; known: {list(ORDER)}")


def validate(**settings) -> dict:
    """Check every setting once (unknown names and bad values raise); drop the Nones."""
    _check_names(settings)
    probe = torch.zeros(1, 2)
    history = torch.zeros(1, 1, dtype=torch.long)
    for name, value in settings.items():
        if value is None:
            continue
        if name in PENALTIES:
            PENALTIES[name](probe, history, value)
        elif name == "temperature":
            _check("temperature", value, _is_number(value) and value >= 0,
                   "a number >= 0 (0 means greedy)")
        else:
            TRUNCATIONS[name](probe, value)
    return {k: v for k, v in settings.items() if v is not None}


def compose(logits: torch.Tensor, history: torch.Tensor | None = None, **settings) -> torch.Tensor:
    """Apply every given rule to logits (..., V) in ``ORDER``; None (or temperature 0,
    greedy) skips a rule. ``history`` (..., H) are the token ids so far (the penalties need it).
    """
    _check_names(settings)
    out = logits
    for name in ORDER:
        value = settings.get(name)
        if value is None or (name == "temperature" and _is_number(value) and value == 0):
            continue
        if name in PENALTIES:
            if history is None:
                raise ValueError(f"{name} needs the history of token ids (history=None given)")
            if history.shape[-1] > 0:
                out = PENALTIES[name](out, history, value)
        else:
            out = TRUNCATIONS[name](out, value)
    return out


def sample(logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw one token per row from softmax(logits) (B, V) -> (B,)."""
    probs = torch.softmax(logits.float(), dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def greedy(logits: torch.Tensor) -> torch.Tensor:
    """The most probable token per row (lowest id among ties) (B, V) -> (B,)."""
    return logits.argmax(dim=-1)
