"""The same model in Hugging Face transformers: ``to_transformers(model)`` -> ``GPT2LMHeadModel``.

Our ``Transformer`` is numerically a GPT-2 (Radford et al. 2019): learned positions, pre-LN
blocks, causal attention scaled by 1/sqrt(head size), an exact (erf) GELU MLP four times as
wide, a final LayerNorm and tied input/output embeddings. The only layout difference is that
GPT-2 stores its projections as ``Conv1D`` (``y = x @ W + b``, W of shape (in, out)) where we
use ``nn.Linear`` (``y = x @ W.T + b``), so every projection weight is transposed (as a view,
see ``_copy_weights``; call ``.contiguous()`` on them before ``save_pretrained``).

Nothing is downloaded: the config is built here from ours and the weights copied in.

Two things to keep in mind when calling the converted model:

* Pass ``attention_mask`` explicitly (``torch.ones_like(input_ids)`` for unpadded input). Our
  newline is token 0, and nothing in our vocabulary is a padding or end-of-text token, so the
  converted config has no ``bos``, ``eos`` or ``pad`` token; ``generate`` then stops only at
  ``max_new_tokens``, as ours does without ``stop``.
* The context window is ``n_positions = block_size``; transformers does not slide it.
* transformers' defaults differ from ours: when it samples it applies ``top_k=50`` unless
  told ``top_k=0`` (50 of our 63 characters), and beam search divides by ``length**1.0``
  unless told ``length_penalty=0.0``. Pass them explicitly. (Setting them in the model's
  ``generation_config`` instead makes transformers warn on every greedy call.)
* "sdpa" attention (the default) gives logits bit-identical to ours; "eager" differs in the
  last bits (about 1e-5), since it is another attention kernel.

``transformers`` is optional (the ``book`` extra); importing this module does not need it,
calling ``to_transformers`` does.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from ..checks import optional_import
from ..model import MLP, Block, CausalSelfAttention, Transformer


class NotConvertibleError(ValueError):
    """The model differs from GPT-2 in a way ``GPT2LMHeadModel`` cannot express."""


def _check_convertible(model) -> float:
    """Raise NotConvertibleError naming the first difference from GPT-2; return the LN eps."""
    if not isinstance(model, Transformer):
        raise NotConvertibleError(f"to_transformers converts a shakespeare_lm Transformer, "
                                  f"got {type(model).__name__}")
    problems = []
    if type(model) is not Transformer:
        problems.append(f"the model is a subclass ({type(model).__name__}) "
                        "whose forward may differ")
    if model.lm_head.weight is not model.tok_emb.weight:
        problems.append("lm_head.weight is not tied to tok_emb.weight (GPT2LMHeadModel ties them)")
    if model.lm_head.bias is not None:
        problems.append("lm_head has a bias (GPT-2's has none)")
    norms = [model.ln_f] + [m for blk in model.blocks for m in (blk.ln1, blk.ln2)]
    for ln in norms:
        if type(ln) is not nn.LayerNorm or not ln.elementwise_affine or ln.bias is None:
            problems.append(f"{ln!r} is not a LayerNorm with weight and bias")
            break
    eps = {ln.eps for ln in norms if isinstance(ln, nn.LayerNorm)}
    if len(eps) > 1:
        problems.append(f"LayerNorms use different eps {sorted(eps)}; "
                        "GPT-2 has one layer_norm_epsilon")
    d = model.config.d_model
    for i, blk in enumerate(model.blocks):
        kinds = (type(blk), type(blk.attn), type(blk.mlp))
        if kinds != (Block, CausalSelfAttention, MLP):
            problems.append(f"block {i} has modules {[k.__name__ for k in kinds]}, not "
                            "Block/CausalSelfAttention/MLP (the GPT-2 layout with exact GELU)")
        lin = [blk.attn.qkv, blk.attn.proj, blk.mlp.fc, blk.mlp.proj]
        if any(type(m) is not nn.Linear or m.bias is None for m in lin):
            problems.append(f"block {i}: every projection must be an nn.Linear with a bias")
        if blk.attn.n_head * blk.attn.head_dim != d:
            problems.append(f"block {i}: {blk.attn.n_head} heads of {blk.attn.head_dim} "
                            f"!= d_model {d}")
    if problems:
        raise NotConvertibleError("cannot convert to GPT2LMHeadModel: " + "; ".join(problems))
    return eps.pop()


def gpt2_config(model: Transformer, attn_implementation: str = "sdpa"):
    """The ``GPT2Config`` equivalent to ``model`` (checked to be convertible first)."""
    transformers = optional_import("transformers", "to_transformers")
    eps = _check_convertible(model)
    cfg = model.config
    inner = model.blocks[0].mlp.fc.out_features if len(model.blocks) else 4 * cfg.d_model
    config = transformers.GPT2Config(
        vocab_size=cfg.vocab_size, n_positions=cfg.block_size, n_embd=cfg.d_model,
        n_layer=cfg.n_layer, n_head=cfg.n_head, n_inner=inner,
        activation_function="gelu",           # exact erf GELU, as F.gelu's default
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,   # eval: no dropout anywhere
        layer_norm_epsilon=eps, scale_attn_weights=True,
        scale_attn_by_inverse_layer_idx=False, reorder_and_upcast_attn=False,
        tie_word_embeddings=True,
        bos_token_id=None, eos_token_id=None, pad_token_id=None,  # no special tokens: "\n" is 0
    )
    config._attn_implementation = attn_implementation
    return config


def _copy_weights(model: Transformer, hf) -> None:
    """Copy our weights into ``hf`` (a fresh GPT2LMHeadModel of the matching config).

    A Conv1D weight (in, out) is our Linear weight (out, in) transposed, and is stored as the
    transposed *view* of a copy of ours: ``Conv1D`` then calls ``addmm(b, x, W.t())`` on
    memory laid out exactly as ``F.linear`` sees it, so both run the same matmul kernel. A
    contiguous transposed copy would hold the same numbers, but for fewer than 4 rows (a
    decode step at batch 1) the CPU BLAS takes another path and the last bit can differ.
    """
    own = lambda w: nn.Parameter(w.detach().clone())
    transposed = lambda w: nn.Parameter(w.detach().clone().t())   # (in, out) view of (out, in)
    tr = hf.transformer
    tr.wte.weight = own(model.tok_emb.weight)
    tr.wpe.weight = own(model.pos_emb.weight)
    pairs = [(tr.ln_f, model.ln_f)]
    for h, blk in zip(tr.h, model.blocks):
        pairs += [(h.ln_1, blk.ln1), (h.ln_2, blk.ln2)]
        for conv, lin in ((h.attn.c_attn, blk.attn.qkv), (h.attn.c_proj, blk.attn.proj),
                          (h.mlp.c_fc, blk.mlp.fc), (h.mlp.c_proj, blk.mlp.proj)):
            if tuple(conv.weight.shape) != tuple(lin.weight.t().shape):  # pragma: no cover
                raise NotConvertibleError(f"Conv1D of shape {tuple(conv.weight.shape)} cannot "
                                          f"take a Linear of shape {tuple(lin.weight.shape)}")
            conv.weight, conv.bias = transposed(lin.weight), own(lin.bias)
    for ln_hf, ln in pairs:
        ln_hf.weight, ln_hf.bias = own(ln.weight), own(ln.bias)
    hf.lm_head.weight = tr.wte.weight                              # tied, as ours


@torch.no_grad()
def to_transformers(model: Transformer, attn_implementation: str = "sdpa"):
    """A ``transformers.GPT2LMHeadModel`` with ``model``'s weights (copied), in eval mode, on
    the same device and dtype. Its logits equal ``model(idx)``'s.

    ``attn_implementation``: "sdpa" (the default, the same kernel as ours) or "eager".
    Raises ``NotConvertibleError`` if the model is not a plain GPT-2-shaped ``Transformer``.
    Pass ``attention_mask`` to the result explicitly (see the module docstring).
    """
    transformers = optional_import("transformers", "to_transformers")
    config = gpt2_config(model, attn_implementation)
    p = next(model.parameters())
    hf = transformers.GPT2LMHeadModel(config).to(device=p.device, dtype=p.dtype)
    _copy_weights(model, hf)
    gc = hf.generation_config
    gc.bos_token_id = gc.eos_token_id = gc.pad_token_id = None
    return hf.eval()


def hf_inputs(ids: torch.Tensor | list[list[int]], pad: list[int] | None = None) -> dict:
    """``input_ids`` and an explicit ``attention_mask`` for left-padded rows (``pad[b]``
    leading slots of row b are padding; none by default)."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    mask = torch.ones_like(ids)
    for b, n in enumerate(pad or []):
        mask[b, :n] = 0
    return {"input_ids": ids.clamp(min=0), "attention_mask": mask}
