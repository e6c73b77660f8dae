"""Decoding rules: pure functions that reshape next-token logits, ``(..., V) -> (..., V)``.

Each rule returns new logits (its input is never modified) in which filtered tokens are
``-inf``; at least one token always survives. Ties are broken deterministically: among
equal logits the lower token id ranks first, so ``top_k(l, 1)`` keeps exactly the token
that ``greedy`` (argmax) picks. Invalid parameters raise ``ValueError`` naming the
parameter, its value and the valid range (``registry.check``: each rule's settings, ranges
and messages are described once, in ``registry.py``). The thresholds are computed in
float64 (where the device has it), so a rule decides the same way as the book's pages,
whose one JavaScript copy of these rules is ``shakespeare_lm/site/static/decoding.js``; a
value within ``TOL`` of a threshold counts as reaching it.

``compose`` applies the rules in one of two documented orders (``ORDERS``). The default is
the one used by Hugging Face transformers' ``generate`` (top-nσ and XTC, which it lacks,
where llama.cpp puts them):

    penalties (repetition, frequency, presence, no-repeat n-gram, DRY) -> temperature
    -> top-H -> top-nσ -> top-k -> top-p -> min-p -> typical -> epsilon -> eta -> XTC

``order="llama.cpp"`` is llama.cpp's default chain, with temperature last (top-H, epsilon
and eta, which it lacks, after min-p):

    penalties (repetition, frequency, presence, no-repeat n-gram, DRY) -> top-nσ -> top-k
    -> typical -> top-p -> min-p -> top-H -> epsilon -> eta -> XTC -> temperature

Every rule sees the distribution the rules before it left (a filter renormalises what it
keeps before the next one looks at it), so the same settings in the two orders can keep
different sets. Mirostat is not a step of the chain: it cuts and draws at the end, and
keeps a state between steps (``Sampler``).
"""

from __future__ import annotations

import math
import numbers

import torch

from ..checks import check_count
from . import registry

NEG_INF = float("-inf")
# A running total within TOL of p, or a log-probability within TOL of a log threshold, counts
# as reaching it, so a textbook tie such as min-p 0.3 on (0.50, 0.25, 0.15, 0.10) is decided
# by the maths, not by the last bit of a float. Far below any gap between real probabilities.
TOL = 1e-12


def _is_number(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


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
    registry.check("temperature", t)
    return logits / t


def top_k(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep exactly the k most probable tokens of (..., V), ties to the lower id
    (Fan et al. 2018); k >= V keeps everything."""
    registry.check("top_k", k)
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
    registry.check("top_p", p)
    if p == 1:
        return logits.clone()
    _, ids = _sorted_desc(logits)
    probs = _logprobs(logits).exp().gather(-1, ids)
    mass_before = torch.cumsum(probs, dim=-1) - probs  # mass of the tokens ranked above
    return _keep_sorted_prefix(logits, ids, mass_before < p - TOL)


def min_p(logits: torch.Tensor, ratio: float) -> torch.Tensor:
    """Min-p (Nguyen et al. 2024) on (..., V): keep tokens with probability
    >= ratio * (the top token's probability). ratio = 0 keeps everything."""
    registry.check("min_p", ratio)
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
    registry.check("typical_p", mass)
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
    registry.check("epsilon", eps)
    if eps == 0:
        return logits.clone()
    return _keep_top(logits, _logprobs(logits) >= math.log(eps) - TOL)


def eta_threshold(logits: torch.Tensor, eps: float) -> torch.Tensor:
    """The eta of eta sampling, min(eps, sqrt(eps) * exp(-H)) with H in nats: (..., V) -> (...)."""
    registry.check("eta", eps)
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
    registry.check("repetition_penalty", penalty)
    seen = _counts(history, logits.shape[-1], logits.dtype) > 0
    penalised = torch.where(logits > 0, logits / penalty, logits * penalty)
    return torch.where(seen, penalised, logits)


def frequency_penalty(logits: torch.Tensor, history: torch.Tensor, alpha: float) -> torch.Tensor:
    """OpenAI's frequency penalty on logits (..., V): subtract alpha times each token's
    count in ``history`` (..., H)."""
    registry.check("frequency_penalty", alpha)
    return logits - alpha * _counts(history, logits.shape[-1], logits.dtype)


def presence_penalty(logits: torch.Tensor, history: torch.Tensor, alpha: float) -> torch.Tensor:
    """OpenAI's presence penalty on logits (..., V): subtract alpha once from every token
    that occurs in ``history`` (..., H)."""
    registry.check("presence_penalty", alpha)
    return logits - alpha * (_counts(history, logits.shape[-1], logits.dtype) > 0).to(logits.dtype)


def top_n_sigma(logits: torch.Tensor, n: float) -> torch.Tensor:
    """Top-nσ (Tang et al. 2024, arXiv 2411.07641), as llama.cpp's ``top-n-sigma`` sampler:
    keep the tokens whose logit is at least ``max - n * σ``, where σ is the standard deviation
    (population, over the finite logits) of each row of (..., V). Dividing every logit by a
    temperature divides both the gap and σ by it, so the kept set does not change with
    temperature."""
    registry.check("top_n_sigma", n)
    x = logits.double() if logits.device.type != "mps" else logits
    finite = torch.isfinite(x)
    count = finite.sum(-1, keepdim=True).clamp(min=1)
    mean = torch.where(finite, x, torch.zeros_like(x)).sum(-1, keepdim=True) / count
    var = torch.where(finite, (x - mean) ** 2, torch.zeros_like(x)).sum(-1, keepdim=True) / count
    top = x.max(dim=-1, keepdim=True).values
    return _keep_top(logits, x >= top - n * var.sqrt() - TOL)


def top_h(logits: torch.Tensor, h: float, top_n: int = 100) -> torch.Tensor:
    """Top-H (Potraghloo et al. 2025, arXiv 2509.02510), as transformers'
    ``TopHLogitsWarper``: among the ``top_n`` most probable tokens of (..., V), renormalised,
    keep the most probable ones while their share of the entropy, the running sum of
    ``-p log p``, stays within ``h`` times the entropy of those ``top_n``. The most probable
    token always stays."""
    registry.check("top_h", h)
    check_count("top_n", top_n, 1, hint=" tokens, such as 100")
    n = min(int(top_n), logits.shape[-1])
    values, ids = _sorted_desc(logits)
    logp = _logprobs(values[..., :n])
    terms = -(logp.exp() * torch.where(torch.isfinite(logp), logp, torch.zeros_like(logp)))
    keep = torch.zeros_like(ids, dtype=torch.bool)
    keep[..., :n] = torch.cumsum(terms, -1) <= h * terms.sum(-1, keepdim=True) + TOL
    return _keep_sorted_prefix(logits, ids, keep)


def xtc(logits: torch.Tensor, threshold: float, probability: float, u: torch.Tensor,
        min_tokens_to_keep: int = 1) -> torch.Tensor:
    """XTC, "exclude top choices" (text-generation-webui PR #6335, llama.cpp PR #9742), as
    llama.cpp's ``xtc`` sampler. In each row of (..., V) whose uniform draw ``u`` (...) is at
    most ``probability``, and if at least two tokens have probability >= ``threshold``, remove
    all of those but the least probable of them, provided ``min_tokens_to_keep`` tokens remain.
    It cuts the head of the distribution, not its tail. A threshold above 0.5 can never leave
    two tokens above it and changes nothing. ``u`` comes from the sampler's seeded generator,
    so a seed still reproduces a text."""
    registry.check("xtc_threshold", threshold)
    registry.check("xtc_probability", probability)
    check_count("min_tokens_to_keep", min_tokens_to_keep, 1, hint=" tokens, such as 1")
    u = torch.as_tensor(u, dtype=torch.float64, device=logits.device)
    if u.shape != logits.shape[:-1]:
        raise ValueError(f"xtc needs one uniform draw per row: u has shape {tuple(u.shape)}, "
                         f"the logits' rows {tuple(logits.shape[:-1])}")
    if probability == 0 or threshold > 0.5:
        return logits.clone()
    _, ids = _sorted_desc(logits)
    probs = _logprobs(logits).exp().gather(-1, ids)
    above = probs >= threshold - TOL                          # a prefix of the sorted order
    n_above = above.sum(-1, keepdim=True)
    finite = torch.isfinite(logits).sum(-1, keepdim=True)
    act = ((u <= probability).unsqueeze(-1) & (n_above >= 2)
           & (finite - (n_above - 1) >= min_tokens_to_keep))
    rank = torch.arange(ids.shape[-1], device=ids.device)
    drop = act & (rank < n_above - 1)                         # every one above but the last
    keep = torch.zeros_like(drop).scatter(-1, ids, ~drop)
    return logits.masked_fill(~keep, NEG_INF)


def no_repeat_ngram(logits: torch.Tensor, history: torch.Tensor, n: int) -> torch.Tensor:
    """transformers' ``NoRepeatNGramLogitsProcessor`` on logits (..., V): forbid every token
    that would complete an n-gram already present in ``history`` (..., H), the prompt and the
    text so far (ids < 0 are padding at the end). n = 1 forbids every token seen."""
    registry.check("no_repeat_ngram_size", n)
    rows = history.reshape(-1, history.shape[-1]).tolist()
    out = logits.clone()
    flat = out.view(-1, out.shape[-1])
    for r, row in enumerate(rows):
        seq = [t for t in row if t >= 0]
        if len(seq) + 1 < n:
            continue
        tail = tuple(seq[len(seq) - n + 1:]) if n > 1 else ()
        banned = {seq[i + n - 1] for i in range(len(seq) - n + 1)
                  if tuple(seq[i:i + n - 1]) == tail}
        if banned:
            flat[r, sorted(banned)] = NEG_INF
    return out


def dry(logits: torch.Tensor, history: torch.Tensor, multiplier: float, base: float = 1.75,
        allowed_length: int = 2, breakers: tuple = (), last_n: int = -1) -> torch.Tensor:
    """DRY, "don't repeat yourself" (text-generation-webui PR #5677, llama.cpp PR #9702), as
    llama.cpp's ``dry`` sampler, on logits (..., V) after ``history`` (..., H), ids < 0 being
    padding. A token that would extend a sequence which already occurred earlier in the last
    ``last_n`` tokens (-1: all of them), when that sequence is at least ``allowed_length``
    long, loses ``multiplier * base ** (length - allowed_length)`` from its logit, ``length``
    being the longest such sequence. ``breakers`` are token-id tuples (a single token, or a
    head and its tail) that no repeat may span: a repeat is measured only back to the most
    recent breaker, and a one-token breaker is never penalised. Exact copying, which a text
    sometimes needs, is penalised too."""
    for name, value in (("dry_multiplier", multiplier), ("dry_base", base),
                        ("dry_allowed_length", allowed_length), ("dry_penalty_last_n", last_n)):
        registry.check(name, value)
    heads = _breaker_heads(breakers)
    out = logits.clone()
    if multiplier == 0 or last_n == 0:
        return out
    max_exp = int(88.7228391 / math.log(base)) if base > 1.000001 else 0
    rows = history.reshape(-1, history.shape[-1]).tolist()
    flat = out.view(-1, out.shape[-1])
    for r, row in enumerate(rows):
        seq = [t for t in row if t >= 0]
        seq = seq if last_n == -1 or last_n >= len(seq) else seq[len(seq) - last_n:]
        for token, length in _dry_repeats(seq, heads, allowed_length).items():
            if () in heads.get(token, []):  # a one-token breaker is never penalised
                continue
            exponent = length - allowed_length
            if max_exp > 0:
                exponent = min(exponent, max_exp)
            flat[r, token] -= multiplier * base ** exponent
    return out


def _breaker_heads(breakers) -> dict[int, list[tuple]]:
    """DRY's breakers by their first token: head -> the tails that follow it."""
    heads: dict[int, list[tuple]] = {}
    for seq in breakers:
        seq = tuple(int(t) for t in seq)
        if seq:
            heads.setdefault(seq[0], []).append(seq[1:])
    return heads


def _dry_repeats(seq: list[int], heads: dict, allowed_length: int) -> dict[int, int]:
    """For each token that would extend a repeat of the end of ``seq``, the longest such
    repeat (at least ``allowed_length``), measured back to the most recent breaker."""
    n = len(seq)
    if n <= allowed_length:
        return {}
    limit = n  # a repeat may not reach back past the latest breaker
    for i in range(n):  # i tokens from the end
        tails = heads.get(seq[n - 1 - i], [])
        match = max((len(t) for t in tails if len(t) <= i and all(
            t[k] == seq[n - i + k] for k in range(len(t)))), default=-1)
        if match >= 0:
            limit = i - match
            break
    if limit < allowed_length:
        return {}
    longest: dict[int, int] = {}
    for j in range(n - 1):  # an earlier occurrence of the end of seq, ending at position j
        length = 0
        while length < j + 1 and seq[j - length] == seq[n - 1 - length]:
            length += 1
        length = min(length, limit)
        if length >= allowed_length:
            longest[seq[j + 1]] = max(longest.get(seq[j + 1], 0), length)
    return longest


def mirostat_truncate(logits: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """Mirostat 2.0's cut (Basu et al. 2021, arXiv 2007.14966), as llama.cpp's
    ``mirostat-v2``: keep the most probable tokens of each row of (..., V) whose surprise
    ``-log2 p`` is at most ``mu`` (...), the row's current target; the top token always stays.
    The state ``mu`` moves after each draw: see :func:`mirostat_update`."""
    mu = torch.as_tensor(mu, dtype=torch.float64, device=logits.device)
    if mu.shape != logits.shape[:-1]:
        raise ValueError(f"mirostat needs one mu per row: mu has shape {tuple(mu.shape)}, "
                         f"the logits' rows {tuple(logits.shape[:-1])}")
    values, ids = _sorted_desc(logits)
    surprise = -_logprobs(values) / math.log(2)
    keep = torch.cumprod((surprise <= mu.unsqueeze(-1) + TOL).to(torch.int8), -1).bool()
    return _keep_sorted_prefix(logits, ids, keep)


def mirostat_update(mu: torch.Tensor, p_chosen: torch.Tensor, tau: float,
                    eta: float) -> torch.Tensor:
    """Mirostat's feedback: ``mu - eta * (s - tau)``, where ``s = -log2 p`` is the surprise of
    the token drawn, under the cut and renormalised distribution it was drawn from."""
    surprise = -torch.log2(torch.as_tensor(p_chosen, dtype=torch.float64))
    return torch.as_tensor(mu, dtype=torch.float64) - eta * (surprise - tau)


# The chain's orders (``registry.RULES`` describes each rule) and the settings it reads.
ORDERS = registry.ORDERS
ORDER = ORDERS["transformers"]
SETTINGS = tuple(name for rule in registry.RULES if rule.step for name in rule.names)
# each step's function, found by the name its registry entry gives
_FUNCTIONS = {rule.main: globals()[rule.function] for rule in registry.RULES if rule.step}


def _check_names(settings: dict) -> None:
    unknown = set(settings) - set(SETTINGS)
    if unknown:
        raise TypeError(f"unknown decoding rule(s) {sorted(unknown)}; known: {list(SETTINGS)}")


def check_order(order: str) -> None:
    """``order`` names a chain of ``ORDERS``."""
    if order not in ORDERS:
        raise ValueError(f"order={order!r} is invalid: order must be one of {list(ORDERS)}")


def _apply(name: str, logits: torch.Tensor, history, settings: dict, u) -> torch.Tensor:
    """One step of the chain, its function called with its settings (each one left out
    taking its registry ``fallback``), the history if it reads it, XTC's draw if it needs it."""
    rule = registry.RULE[name]
    kwargs = {s.arg: s.fallback if settings.get(s.name) is None else settings[s.name]
              for s in rule.settings}
    if rule.history:
        kwargs["history"] = history
    if rule.draws:
        kwargs["u"] = u
    return _FUNCTIONS[name](logits, **kwargs)


def validate(**settings) -> dict:
    """Check every setting of the chain once (unknown names and bad values raise, with the
    registry's messages: ``registry.validate``); drop the Nones."""
    _check_names(settings)
    registry.validate(settings)
    return {k: v for k, v in settings.items() if v is not None}


def compose(logits: torch.Tensor, history: torch.Tensor | None = None, *,
            order: str = "transformers", xtc_u: torch.Tensor | None = None,
            **settings) -> torch.Tensor:
    """Apply every given rule to logits (..., V) in the chain ``order`` (``ORDERS``); None
    (or temperature 0, greedy) skips a rule. ``history`` (..., H) are the token ids so far
    (the penalties need it); ``xtc_u`` (...) the uniform draws XTC needs when it is on.
    """
    _check_names(settings)
    check_order(order)
    out = logits
    for name in ORDERS[order]:
        value = settings.get(name)
        if value is None or (name == "temperature" and _is_number(value) and value == 0):
            continue
        if registry.RULE[name].history:
            if history is None:
                raise ValueError(f"{name} needs the history of token ids (history=None given)")
            if history.shape[-1] == 0:
                continue
        if registry.RULE[name].draws and xtc_u is None:
            raise ValueError(f"{name} needs one uniform draw per row (xtc_u=None given)")
        out = _apply(name, out, history, settings, xtc_u)
    return out


def sample(logits: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Draw one token per row from softmax(logits) (B, V) -> (B,)."""
    probs = torch.softmax(logits.float(), dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def greedy(logits: torch.Tensor) -> torch.Tensor:
    """The most probable token per row (lowest id among ties) (B, V) -> (B,)."""
    return logits.argmax(dim=-1)
