"""Contrastive search (Su et al. 2022), batched on the KV cache.

At each step the k (``num_candidates``) most probable next characters are candidates;
candidate v scores

    (1 - alpha) * p(v | x_<t)  -  alpha * max_j cos(h_v, h_j)

where h_v is the model's last hidden state (after the final LayerNorm) with v appended
and h_j those of every earlier character, prompt included. The best-scoring candidate is
kept. alpha = 0 (or k = 1) is greedy decoding; a larger alpha pushes away from characters
whose representation repeats the context, which is how it avoids degenerate loops.

Batched: each prompt owns k rows of the KV cache. A step feeds the k candidates of every
prompt as one (B * k, 1) batch, then copies the winning row's new cache slot into its k
rows, so the cache never has to be reordered as a whole.

Why it takes no decoding settings (temperature, truncation rules, penalties, seed): the
search is deterministic and its own rule chooses among its own candidates. Its candidate set
is the ``num_candidates`` most probable characters of the untouched distribution, which is
what a truncation rule would decide; temperature or a penalty would change p(v), the first
term of the score, and so what alpha trades against; nothing is drawn, so a seed does
nothing. Such settings are refused by ``DecodingConfig.refuse_all_but`` with that reason,
rather than silently ignored, and its own arguments go through ``shakespeare_lm.decoding.checks``
like every decoder's.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..timing import Stopwatch, model_device
from .checks import (as_prompt_list, check_count, check_max_new_tokens, check_number,
                     encode_prompts, one_or_list)
from .context_window import WindowPolicy
from .generate import Generation, Timings
from .sampler import DecodingConfig
from .stopping import limit_reason


@dataclass
class _Search:
    """The state of one batched contrastive search between steps."""

    k: int
    alpha: float
    last: torch.Tensor        # (B, V) logits for the next character of each prompt
    context: torch.Tensor     # (B, S, C) normalised hidden states h_j of every slot
    real: torch.Tensor        # (B, S) True where a slot is not padding
    budgets: list[int]
    out_ids: list[list[int]]
    out_lp: list[list[float]]


def _step(model, cache, run: _Search, s: int) -> None:
    """Choose every prompt's character at slot ``s`` and write it into the cache rows."""
    B, k, device = len(run.budgets), run.k, run.last.device
    rows = torch.arange(B, device=device)
    logp = torch.log_softmax(run.last, dim=-1)                           # (B, V)
    cand_lp, cand = logp.topk(k, dim=-1, sorted=True)                     # (B, k)
    # rows that filled their window are parked (outputs discarded), as in generate
    cache.park(s - (model.config.block_size - 1))
    logits, hidden = model(cand.reshape(B * k, 1), torch.tensor([s], device=device),
                           return_hidden=True)
    h = F.normalize(hidden[:, -1].float(), dim=-1).view(B, k, -1)        # (B, k, C)
    sim = torch.einsum("bkc,bsc->bks", h, run.context[:, :s])            # cosine, (B, k, s)
    sim = sim.masked_fill(~run.real[:, None, :s], float("-inf"))
    score = (1 - run.alpha) * cand_lp.exp() - run.alpha * sim.max(-1).values
    best = score.argmax(-1)                                               # (B,) first max wins
    cache.copy_slot(s, (rows * k + best).repeat_interleave(k))           # winners' slot s
    run.context[:, s] = h[rows, best]
    run.last = logits.view(B, k, -1, logits.shape[-1])[rows, best, -1].float()
    nxt, nxt_lp = cand[rows, best].tolist(), cand_lp[rows, best].tolist()
    for b in range(B):
        if len(run.out_ids[b]) < run.budgets[b]:
            run.out_ids[b].append(nxt[b])
            run.out_lp[b].append(nxt_lp[b])


def _start(model, encoded, k: int, alpha: float, max_new_tokens: int, device):
    """(left-padded prompts (B, L), padding (B,), L, steps, the empty search state)."""
    B, policy = len(encoded), WindowPolicy(model.config.block_size, slide=False)
    L = max(len(e) for e in encoded)
    budgets = [policy.window(len(e), max_new_tokens).budget for e in encoded]
    pad = torch.tensor([L - len(e) for e in encoded], device=device)     # (B,) left padding
    idx = torch.zeros(B, L, dtype=torch.long, device=device)
    for b, e in enumerate(encoded):
        idx[b, L - len(e):] = torch.tensor(e, device=device)
    run = _Search(k, alpha, None, None, None, budgets, [[] for _ in encoded],
                  [[] for _ in encoded])
    return idx, pad, L, max(budgets), run


@torch.no_grad()
def contrastive_search(model, tok, prompt: str | list[str], max_new_tokens: int, *,
                       num_candidates: int = 5, alpha: float = 0.6,
                       config: DecodingConfig | None = None,
                       **settings) -> Generation | list[Generation]:
    """Continue ``prompt`` (a str, or a list of str as one batch) by contrastive search.

    num_candidates: candidates per step (k in Su et al. 2022); alpha in [0, 1]: weight of
    the degeneration penalty. Deterministic; it takes no decoding settings (see the module
    docstring: a ``config`` or keyword setting other than the defaults is a ValueError that
    says why). Returns ``Generation``s as ``generate`` does, with ``logprobs`` under the
    untruncated model; a row stops at ``max_new_tokens`` ("max_tokens") or when the context
    window is full ("context_window").
    """
    DecodingConfig.from_settings(config, **settings).refuse_all_but(
        (), "contrastive search", "it chooses deterministically among its num_candidates most "
        "probable characters by its own score, which a temperature, truncation rule or penalty "
        "would change the meaning of")
    V = model.config.vocab_size
    encoded = encode_prompts(tok, prompt, model.config.block_size)
    check_max_new_tokens(max_new_tokens)
    check_count("num_candidates", num_candidates, 1, V, " (at most the vocabulary size)")
    check_number("alpha", alpha, 0, 1, " (0 is greedy decoding)")
    device, k = model_device(model), num_candidates
    idx, pad, L, steps, run = _start(model, encoded, k, alpha, max_new_tokens, device)
    B = len(encoded)
    prefill_s = ttft = decode_s = 0.0
    if steps > 0:
        with model.cache(B * k, L + steps, pad.repeat_interleave(k)) as cache:
            with Stopwatch(device) as sw_prefill:
                # every prompt fills its k rows (identical): (B*k, L)
                logits, hidden = model(idx.repeat_interleave(k, dim=0),
                                       torch.arange(L, device=device), return_hidden=True)
            prefill_s = sw_prefill.seconds
            run.last = logits[::k, -1].float()                              # (B, V)
            run.context = torch.zeros(B, L + steps, hidden.shape[-1], device=device)
            run.context[:, :L] = F.normalize(hidden[::k].float(), dim=-1)
            run.real = torch.arange(L + steps, device=device)[None, :] >= pad[:, None]
            with Stopwatch(device) as sw_first:
                _step(model, cache, run, L)
            ttft = prefill_s + sw_first.seconds
            with Stopwatch(device) as sw_decode:
                for i in range(1, steps):
                    _step(model, cache, run, L + i)
            decode_s = sw_decode.seconds
    timings = Timings(prefill_s, ttft, decode_s, steps, B, str(device))
    return one_or_list(prompt, [
        Generation(p, tok.decode(run.out_ids[b]), run.out_ids[b], run.out_lp[b],
                   limit_reason(run.budgets[b], max_new_tokens), timings)
        for b, p in enumerate(as_prompt_list(prompt))])
