"""Wall-clock speedup of speculative decoding over plain decoding, measured in one run."""

from __future__ import annotations

from ..generate import generate
from ..model import Transformer
from ..timing import benchmark, model_device
from .algorithm import speculative_decode
from .drafts import ModelDraft, NGramDraft, PromptLookupDraft
from .stats import expected_tokens_per_pass


# --- benchmark ------------------------------------------------------------------------
BENCH_PROMPT = "KATHARINA:\nMoved! in good time: "


def bench_speculative(target: Transformer, draft_model: Transformer | None, tok, *,
                      prompt: str = BENCH_PROMPT, new_tokens: int = 200,
                      gammas: tuple[int, ...] = (1, 2, 4, 8), temperature: float = 1.0,
                      seed: int = 0, repeats: int = 3, ngram_orders: tuple[int, ...] = (3, 4),
                      drafts: dict | None = None) -> dict:
    """Wall-clock speedup of speculative decoding over plain KV-cache decoding
    (``generate``) of the same target at batch 1, for each draft and gamma.

    Drafts: n-grams of ``ngram_orders``, ``draft_model`` (skipped if None) and prompt lookup,
    or the dict ``drafts`` (name -> Draft or Transformer) instead. Each timing is the median
    of ``repeats`` runs after a warm-up (``timing.benchmark``); the draft's cost is included.
    Returns a dict: device, plain seconds and tokens/s, one row per (draft, gamma) with
    seconds, speedup, acceptance rate, tokens per pass (measured and i.i.d.-predicted), the
    measured draft cost ratio, and the best row.
    """
    device = model_device(target)
    if drafts is None:
        drafts = {f"{n}-gram": NGramDraft(tok, order=n) for n in ngram_orders}
        if draft_model is not None:
            drafts["draft model"] = ModelDraft(draft_model, name="draft model")
        drafts["prompt lookup"] = PromptLookupDraft(tok.vocab_size)

    def plain():
        generate(target, tok, prompt, new_tokens, temperature=temperature, seed=seed)

    plain_s = benchmark(plain, device, warmup=1, repeats=repeats)
    rows = []
    for name, draft in drafts.items():
        for g in gammas:
            last = {}

            def run():
                last["stats"] = speculative_decode(target, draft, tok, prompt, new_tokens, g,
                                                   temperature=temperature, seed=seed).stats

            seconds = benchmark(run, device, warmup=1, repeats=repeats)
            st = last["stats"]
            rows.append({"draft": name, "gamma": g, "seconds": seconds,
                         "speedup": plain_s / seconds,
                         "acceptance_rate": st.acceptance_rate,
                         "tokens_per_pass": st.tokens_per_pass,
                         "predicted_tokens_per_pass": expected_tokens_per_pass(st.acceptance_rate, g)
                         if st.proposed else float("nan"),
                         "cost_ratio": st.cost_ratio})
    return {"device": str(device), "prompt": prompt, "new_tokens": new_tokens,
            "temperature": temperature, "plain_s": plain_s,
            "plain_tokens_per_s": new_tokens / plain_s, "rows": rows,
            "best": max(rows, key=lambda r: r["speedup"])}
