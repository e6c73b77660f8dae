"""Export the shipped models to ONNX, with the KV cache as graph inputs and outputs.

    python -m shakespeare_lm.interop.export [--out _build/onnx]

writes ``shakespeare.onnx`` and ``draft.onnx`` (plus ``vocab.json``) for the static site's
live explorers, which run them in the page with ONNX Runtime Web. One graph serves both
phases of generation: it reads T new characters at positions P..P+T-1 and the keys and
values of the P characters before them, and returns the logits of the T characters and the
keys and values of all P+T. Prefill is P = 0, T = len(prompt); a decode step is T = 1.

    inputs   idx      int64   (B, T)
             past_k   float32 (n_layer, B, n_head, P, head_dim)
             past_v   float32 (n_layer, B, n_head, P, head_dim)
    outputs  logits   float32 (B, T, V)
             present_k, present_v   float32 (n_layer, B, n_head, P + T, head_dim)

The graphs are build outputs (``make book`` runs this module), never committed: the
weights live once, in ``data/*.safetensors``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import time
import warnings
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..model import Transformer
from ..paths import ONNX_DIR
from ..weights import load_pretrained

OUT_DIR = ONNX_DIR
MODELS = ("shakespeare", "draft")
INPUTS = ("idx", "past_k", "past_v")
OUTPUTS = ("logits", "present_k", "present_v")
OPSET = 18


class CachedStep(nn.Module):
    """The model's forward pass with an explicit KV cache: (idx, past_k, past_v) ->
    (logits, present_k, present_v), shapes in the module docstring.

    It reads the weights of a ``Transformer`` and recomputes attention with them, so that
    the exported graph depends only on the weights, not on the model's cache object.
    """

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model
        cfg = model.config
        self.n_head, self.head_dim = cfg.n_head, cfg.head_dim

    def attention(self, attn, x, past_k, past_v, visible):
        B, T, C = x.shape
        q, k, v = attn.qkv(x).split(C, dim=2)
        # (B, T, C) -> (B, nh, T, hs)
        q, k, v = (t.view(B, T, self.n_head, self.head_dim).transpose(1, 2) for t in (q, k, v))
        k_all = torch.cat([past_k, k], dim=2)                        # (B, nh, P+T, hs)
        v_all = torch.cat([past_v, v], dim=2)
        scores = q @ k_all.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, nh, T, P+T)
        scores = scores.masked_fill(~visible, float("-inf"))
        y = F.softmax(scores, dim=-1) @ v_all                         # (B, nh, T, hs)
        y = y.transpose(1, 2).reshape(B, T, C)                        # (B, T, C)
        return attn.proj(y), k_all, v_all

    def forward(self, idx, past_k, past_v):
        m = self.model
        T, P = idx.shape[1], past_k.shape[3]
        pos = torch.arange(T, device=idx.device) + P                  # (T,) absolute positions
        slots = torch.arange(P + T, device=idx.device)
        visible = slots[None, :] <= pos[:, None]                      # (T, P+T) causal
        x = m.tok_emb(idx) + m.pos_emb(pos)[None]
        present_k, present_v = [], []
        for layer, blk in enumerate(m.blocks):
            a, k_all, v_all = self.attention(blk.attn, blk.ln1(x), past_k[layer], past_v[layer],
                                             visible)
            x = x + a                                                 # pre-LN residual
            x = x + blk.mlp(blk.ln2(x))
            present_k.append(k_all)
            present_v.append(v_all)
        logits = m.lm_head(m.ln_f(x))                                 # (B, T, V)
        return logits, torch.stack(present_k), torch.stack(present_v)


def empty_cache(model: Transformer, batch: int = 1, length: int = 0) -> torch.Tensor:
    """A zero KV cache (n_layer, B, n_head, length, head_dim) for one of past_k / past_v."""
    cfg = model.config
    return torch.zeros(cfg.n_layer, batch, cfg.n_head, length, cfg.head_dim)


def export_model(model: Transformer, path: str | Path) -> Path:
    """Write ``model`` as one ONNX graph with dynamic batch, new length and past length."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    step = CachedStep(model.eval()).eval()
    example = (torch.zeros(2, 5, dtype=torch.long), empty_cache(model, 2, 3),
               empty_cache(model, 2, 3))
    batch, new, past = (torch.export.Dim("batch", max=1024), torch.export.Dim("new", max=4096),
                        torch.export.Dim("past", max=4096))
    cache = {1: batch, 3: past}
    # the exporter's chatter (no torchvision, deprecations inside torch) is not ours to fix
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", FutureWarning)
        program = torch.onnx.export(
            step, example, input_names=list(INPUTS), output_names=list(OUTPUTS),
            dynamic_shapes={"idx": {0: batch, 1: new}, "past_k": cache, "past_v": cache},
            opset_version=OPSET, dynamo=True, external_data=False, verbose=False)
        program.optimize()
    program.save(str(path), external_data=False)
    return path


def export_all(out_dir: str | Path = OUT_DIR, names=MODELS) -> list[Path]:
    """Export every shipped model in ``names`` to ``out_dir/<name>.onnx``; also writes
    ``vocab.json`` (the characters, and each model's config)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths, configs, chars = [], {}, None
    for name in names:
        model, tok = load_pretrained(name)
        if chars is not None and tok.chars != chars:
            raise ValueError(f"model {name!r} has another vocabulary than {names[0]!r}")
        chars = tok.chars
        paths.append(export_model(model, out_dir / f"{name}.onnx"))
        configs[name] = model.config.to_dict()
    (out_dir / "vocab.json").write_text(json.dumps({"chars": chars, "models": configs}, indent=1))
    return paths


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT_DIR, help=f"folder (default {OUT_DIR})")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    for path in export_all(args.out):
        print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")
    print(f"exported in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
