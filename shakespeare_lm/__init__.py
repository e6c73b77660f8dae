"""shakespeare_lm: the small character-level Shakespeare model the book runs on.

    import shakespeare_lm as slm
    model, tok = slm.load_pretrained()
    g = slm.generate(model, tok, "KATHARINA:\\n", 200, temperature=0.8, seed=0)
"""

from . import constrained, heads, live, rules, speculative
from .automata import (BracketListConstraint, ChoiceConstraint, Constraint, ConstraintError,
                       RegexConstraint)
from .beam import beam_search
from .constrained import exact_distributions, rejection_sample, total_variation
from .contrastive import contrastive_search
from .heads import DraftHeads, load_heads
from .generate import (Generation, Timings, decode_n_tokens, decode_one_token, generate,
                       prefill)
from .hf import to_transformers  # transformers itself is imported only when it is called
from .model import PRESETS, KVCache, KVCacheHandle, ModelConfig, Transformer, make_model
from .sampler import DecodingConfig, Sampler
from .scoring import score_continuations
from .speculative import SpeculativeGeneration, speculative_decode
from .tokenizer import CharTokenizer
from .weights import WeightsError, load_model, load_pretrained, save_model

__all__ = [
    "BracketListConstraint", "CharTokenizer", "ChoiceConstraint", "Constraint",
    "ConstraintError", "DecodingConfig", "DraftHeads", "Generation", "KVCache", "KVCacheHandle",
    "ModelConfig", "PRESETS", "RegexConstraint", "Sampler", "SpeculativeGeneration",
    "Timings", "Transformer", "WeightsError", "beam_search", "constrained",
    "contrastive_search", "decode_n_tokens", "decode_one_token", "exact_distributions",
    "generate", "heads", "live", "load_heads", "load_model", "load_pretrained",
    "make_model", "prefill", "rejection_sample", "rules", "save_model", "score_continuations",
    "speculative", "speculative_decode", "to_transformers", "total_variation",
]
