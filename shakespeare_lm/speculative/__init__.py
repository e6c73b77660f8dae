"""Speculative decoding (Leviathan et al. 2023; Chen et al. 2023), in four modules:

* ``drafts``: what proposes tokens (``NGramDraft``, ``ModelDraft``, ``PromptLookupDraft``,
  ``HeadsDraft``, ``EagleDraft``), with the trained parts of the last two in ``heads``
  (Medusa) and ``eagle``;
* ``algorithm``: one round (draft, verify, accept or reject, roll back) and the decoder;
* ``stats``: what the rounds did, what theory predicts, and the chi-square test;
* ``benchmark``: the measured wall-clock speedup over plain decoding.

    from shakespeare_lm import speculative as sp
    g = sp.speculative_decode(target, sp.NGramDraft(tok), tok, prompt, 200, gamma=4)
    g.text, g.stats.acceptance_rate
"""

from .algorithm import (VERIFIERS, DraftRows, Round, SpeculativeGeneration, SpeculativeSetup,
                        accept_reject, draft_tokens, next_token_counts, prefill_both, rollback,
                        setup, speculative_decode, speculative_round, target_distributions,
                        verify_pass)
from .benchmark import BENCH_PROMPT, SPREAD_LIMIT, bench_speculative, default_drafts
from .drafts import (Draft, EagleDraft, HeadsDraft, ModelDraft, NGramDraft, PromptLookupDraft,
                     as_draft)
from .stats import (SpeculativeStats, chi_square_test, expected_accepted, expected_tokens_per_pass,
                    predicted_speedup)

__all__ = [
    "BENCH_PROMPT", "Draft", "EagleDraft", "HeadsDraft", "ModelDraft", "NGramDraft",
    "PromptLookupDraft", "Round",
    "SpeculativeGeneration", "SpeculativeSetup", "SpeculativeStats", "VERIFIERS",
    "DraftRows", "SPREAD_LIMIT", "accept_reject", "as_draft", "bench_speculative", "default_drafts",
    "chi_square_test", "draft_tokens", "expected_accepted", "expected_tokens_per_pass",
    "next_token_counts", "predicted_speedup",
    "prefill_both", "rollback", "setup", "speculative_decode", "speculative_round",
    "target_distributions", "verify_pass",
]
