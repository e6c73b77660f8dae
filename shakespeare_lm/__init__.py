"""shakespeare_lm: the small character-level Shakespeare model the book runs on.

    import shakespeare_lm as slm
    model, tok = slm.load_pretrained()
    g = slm.generate(model, tok, "KATHARINA:\\n", 200, temperature=0.8, seed=0)

The package is laid out in wings, each using only what lies below it:

- here: the model, its tokenizer, weights, corpus, training, paths, timing and the bench;
- ``decoding``: the rules, the sampler and the decoders (generate, beam, contrastive,
  constrained, chat);
- ``speculative``: drafts, the exact accept/reject round, its statistics and benchmark;
- ``cost``: the roofline model, probes of this machine, the serving simulation;
- ``interop``: the same model in transformers and ONNX, and benches against them;
- ``analysis``: metrics, chapter 4's experiment, chapter 8's subword tokenizer;
- ``site``: the book's presentation (figures, explorers, prose values), installed with the
  ``book`` extra. The library never imports it, and ``import shakespeare_lm`` loads none of it.
"""

from . import speculative
from .decoding import constrained, rules
from .decoding.automata import (BracketListConstraint, ChoiceConstraint, Constraint,
                                ConstraintError, RegexConstraint)
from .decoding.beam import beam_search
from .decoding.constrained import exact_distributions, rejection_sample, total_variation
from .decoding.contrastive import contrastive_search
from .decoding.generate import (Generation, Timings, decode_n_tokens, decode_one_token, generate,
                                prefill)
from .decoding.sampler import DecodingConfig, Sampler
from .decoding.scoring import score_continuations
from .interop.hf import to_transformers  # transformers is imported only when it is called
from .model import PRESETS, KVCache, KVCacheHandle, ModelConfig, Transformer, make_model
from .speculative import SpeculativeGeneration, eagle, heads, speculative_decode
from .speculative.eagle import FeatureHead, load_feature_head
from .speculative.heads import DraftHeads, load_heads
from .tokenizer import CharTokenizer
from .weights import WeightsError, load_model, load_pretrained, save_model

__all__ = [
    "BracketListConstraint", "CharTokenizer", "ChoiceConstraint", "Constraint",
    "ConstraintError", "DecodingConfig", "DraftHeads", "FeatureHead", "Generation", "KVCache",
    "KVCacheHandle",
    "ModelConfig", "PRESETS", "RegexConstraint", "Sampler", "SpeculativeGeneration",
    "Timings", "Transformer", "WeightsError", "beam_search", "constrained",
    "contrastive_search", "decode_n_tokens", "decode_one_token", "exact_distributions",
    "eagle", "generate", "heads", "load_feature_head", "load_heads", "load_model",
    "load_pretrained",
    "make_model", "prefill", "rejection_sample", "rules", "save_model", "score_continuations",
    "speculative", "speculative_decode", "to_transformers", "total_variation",
]
