"""Contrastive search (Su et al. 2022), batched on the KV cache.

At each step the k most probable next characters are candidates; candidate v scores

    (1 - alpha) * p(v | x_<t)  -  alpha * max_j cos(h_v, h_j)

where h_v is the model's last hidden state (after the final LayerNorm) with v appended
and h_j those of every earlier character, prompt included. The best-scoring candidate is
kept. alpha = 0 (or k = 1) is greedy decoding; a larger alpha pushes away from characters
whose representation repeats the context, which is how it avoids degenerate loops.

Batched: each prompt owns k rows of the KV cache. A step feeds the k candidates of every
prompt as one (B * k, 1) batch, then copies the winning row's new cache slot into its k
rows, so the cache never has to be reordered as a whole.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .generate import Generation, Timings, _check_max_new_tokens, _check_prompts
from .timing import Stopwatch, model_device


def _check_settings(top_k, alpha, vocab_size: int) -> None:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= vocab_size:
        raise ValueError(f"top_k={top_k!r} is invalid: top_k must be an integer in "
                         f"[1, {vocab_size}] (the vocabulary size)")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha={alpha!r} is invalid: alpha must be a number in [0, 1] "
                         "(0 is greedy decoding)")


@torch.no_grad()
def contrastive_search(model, tok, prompt: str | list[str], max_new_tokens: int, *,
                       top_k: int = 5, alpha: float = 0.6) -> Generation | list[Generation]:
    """Continue ``prompt`` (a str, or a list of str as one batch) by contrastive search.

    top_k: candidates per step (k in Su et al. 2022); alpha in [0, 1]: weight of the
    degeneration penalty. Deterministic. Returns ``Generation``s as ``generate`` does, with
    ``logprobs`` under the untruncated model; a row stops at ``max_new_tokens``
    ("max_tokens") or when the context window is full ("context_window").
    """
    prompts, encoded = _check_prompts(tok, prompt)
    _check_max_new_tokens(max_new_tokens)
    V, block = model.config.vocab_size, model.config.block_size
    _check_settings(top_k, alpha, V)
    too_long = [(i, len(e)) for i, e in enumerate(encoded) if len(e) > block]
    if too_long:
        i, n = too_long[0]
        raise ValueError(f"prompt {i} has {n} characters but the model's context window is "
                         f"{block}; keep its last {block} characters (prompt[-{block}:]) or fewer")
    device = model_device(model)
    B, k = len(encoded), top_k
    lengths = [len(e) for e in encoded]
    L = max(lengths)
    budgets = [min(max_new_tokens, block - n) for n in lengths]
    steps = max(budgets)
    pad = torch.tensor([L - n for n in lengths], device=device)     # (B,) left padding
    idx = torch.zeros(B, L, dtype=torch.long, device=device)
    for b, e in enumerate(encoded):
        idx[b, L - len(e):] = torch.tensor(e, device=device)
    out_ids = [[] for _ in range(B)]
    out_lp = [[] for _ in range(B)]
    rows = torch.arange(B, device=device)

    prefill_s = ttft = decode_s = 0.0
    if steps > 0:
        model.setup_cache(B * k, L + steps, pad.repeat_interleave(k))
        try:
            with Stopwatch(device) as sw_prefill:
                # every prompt fills its k rows (identical): (B*k, L)
                logits, hidden = model(idx.repeat_interleave(k, dim=0),
                                       torch.arange(L, device=device), return_hidden=True)
            prefill_s = sw_prefill.seconds
            last = logits[::k, -1].float()                                  # (B, V)
            C = hidden.shape[-1]
            context = torch.zeros(B, L + steps, C, device=device)           # h_j of every slot
            context[:, :L] = F.normalize(hidden[::k].float(), dim=-1)
            slots = torch.arange(L + steps, device=device)
            real = slots[None, :] >= pad[:, None]                          # (B, S) not padding

            def step(i: int) -> None:
                nonlocal last
                s = L + i
                logp = torch.log_softmax(last, dim=-1)                      # (B, V)
                cand_lp, cand = logp.topk(k, dim=-1, sorted=True)            # (B, k)
                # rows that filled their window are parked (outputs discarded), as in generate
                model.pad.clamp_(min=s - (block - 1))
                logits, hidden = model(cand.reshape(B * k, 1), torch.tensor([s], device=device),
                                       return_hidden=True)
                h = F.normalize(hidden[:, -1].float(), dim=-1).view(B, k, C)
                sim = torch.einsum("bkc,bsc->bks", h, context[:, :s])      # cosine, (B, k, s)
                sim = sim.masked_fill(~real[:, None, :s], float("-inf"))
                score = (1 - alpha) * cand_lp.exp() - alpha * sim.max(-1).values
                best = score.argmax(-1)                                     # (B,) first max wins
                chosen = (rows * k + best).repeat_interleave(k)             # (B*k,) winning rows
                for cache in model.kv_caches:                               # copy only slot s
                    cache.k_cache[:, :, s] = cache.k_cache[chosen, :, s]
                    cache.v_cache[:, :, s] = cache.v_cache[chosen, :, s]
                context[:, s] = h[rows, best]
                last = logits.view(B, k, -1, V)[rows, best, -1].float()
                nxt, nxt_lp = cand[rows, best].tolist(), cand_lp[rows, best].tolist()
                for b in range(B):
                    if len(out_ids[b]) < budgets[b]:
                        out_ids[b].append(nxt[b])
                        out_lp[b].append(nxt_lp[b])

            with Stopwatch(device) as sw_first:
                step(0)
            ttft = prefill_s + sw_first.seconds
            with Stopwatch(device) as sw_decode:
                for i in range(1, steps):
                    step(i)
            decode_s = sw_decode.seconds
        finally:
            model.clear_cache()

    timings = Timings(prefill_s, ttft, decode_s, steps, B, str(device))
    results = []
    for b, p in enumerate(prompts):
        reason = "max_tokens" if budgets[b] == max_new_tokens else "context_window"
        results.append(Generation(p, tok.decode(out_ids[b]), out_ids[b], out_lp[b], reason, timings))
    return results[0] if isinstance(prompt, str) else results
