"""shakespeare_lm: the small character-level Shakespeare model the book runs on.

    import shakespeare_lm as slm
    model, tok = slm.load_pretrained()
    g = slm.generate(model, tok, "KATHARINA:\\n", 200, temperature=0.8, seed=0)
"""

from . import constrained, rules, speculative
from .beam import beam_search
from .constrained import (BracketListConstraint, ChoiceConstraint, Constraint, ConstraintError,
                          RegexConstraint, exact_distributions, rejection_sample, total_variation)
from .generate import (Generation, Timings, decode_n_tokens, decode_one_token, generate,
                       prefill)
from .model import PRESETS, KVCache, ModelConfig, Transformer, make_model
from .scoring import score_continuations
from .speculative import speculative_decode
from .tokenizer import CharTokenizer
from .weights import WeightsError, load_model, load_pretrained, save_model

__all__ = [
    "BracketListConstraint", "CharTokenizer", "ChoiceConstraint", "Constraint",
    "ConstraintError", "Generation", "KVCache", "ModelConfig", "PRESETS", "RegexConstraint",
    "Timings", "Transformer", "WeightsError", "beam_search", "constrained", "decode_n_tokens",
    "decode_one_token", "exact_distributions", "generate", "load_model", "load_pretrained",
    "make_model", "prefill", "rejection_sample", "rules", "save_model", "score_continuations",
    "speculative", "speculative_decode", "total_variation",
]
from .hf import to_transformers  # noqa: E402 (imports transformers only when called)
