"""Save and load models as safetensors (tensors) + JSON (config, vocabulary, provenance).

Never pickles. A corrupt, truncated or mismatched file raises ``WeightsError`` that says
which file, what is wrong, and how to get a good one.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .corpus import sha256_file
from .model import ModelConfig, Transformer
from .paths import DATA_DIR
from .tokenizer import CharTokenizer

FIX_HINT = ("re-check out the file with git (git checkout -- data/) or retrain it with "
            "python -m shakespeare_lm.train (see README)")


class WeightsError(RuntimeError):
    """A weights file or its JSON sidecar is missing, corrupt or does not match."""


def state_for_saving(model: Transformer) -> dict[str, torch.Tensor]:
    # tied weights: store the embedding once; lm_head.weight is the same tensor
    return {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()
            if k != "lm_head.weight"}


def state_for_loading(saved: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The inverse of ``state_for_saving``: point lm_head.weight back at the embedding."""
    return {**saved, "lm_head.weight": saved.get("tok_emb.weight")}


def save_model(model: Transformer, tok: CharTokenizer, path: str | Path, **info) -> Path:
    """Write ``path`` (.safetensors) and its ``.json`` sidecar; returns the JSON path."""
    path = Path(path).with_suffix(".safetensors")
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(state_for_saving(model), str(path))
    meta = {"config": model.config.to_dict(), "vocab": tok.chars,
            "weights_sha256": sha256_file(path), **info}
    json_path = path.with_suffix(".json")
    json_path.write_text(json.dumps(meta, indent=2) + "\n")
    return json_path


def read_meta(path: str | Path) -> dict:
    json_path = Path(path).with_suffix(".json")
    if not json_path.exists():
        raise WeightsError(f"{json_path} is missing: the weights need their JSON sidecar; "
                           f"{FIX_HINT}")
    try:
        meta = json.loads(json_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise WeightsError(f"{json_path} is not valid JSON ({e}); {FIX_HINT}") from None
    for key in ("config", "vocab"):
        if key not in meta:
            raise WeightsError(f"{json_path} has no {key!r} entry; {FIX_HINT}")
    return meta


def load_model(path: str | Path, device: str | torch.device = "cpu",
               verify_checksum: bool = True) -> tuple[Transformer, CharTokenizer, dict]:
    """Load (model in eval mode, tokenizer, metadata) from ``path`` (.safetensors + .json)."""
    path = Path(path).with_suffix(".safetensors")
    meta = read_meta(path)
    if not path.exists():
        raise WeightsError(f"{path} is missing; {FIX_HINT}")
    if verify_checksum and "weights_sha256" in meta and sha256_file(path) != meta["weights_sha256"]:
        raise WeightsError(
            f"{path} does not match the sha256 recorded in {path.with_suffix('.json').name} "
            f"(the file is corrupt, truncated or from another run); {FIX_HINT}")
    try:
        state = load_file(str(path), device=str(device))
    except (SafetensorError, OSError, ValueError) as e:
        raise WeightsError(f"{path} is not a readable safetensors file ({e}); {FIX_HINT}") from None
    try:
        cfg = ModelConfig(**meta["config"])
        tok = CharTokenizer(meta["vocab"])
    except (TypeError, ValueError) as e:
        raise WeightsError(f"{path.with_suffix('.json')} has a bad config or vocabulary "
                           f"({e})") from None
    if tok.vocab_size != cfg.vocab_size:
        raise WeightsError(f"vocabulary of {tok.vocab_size} characters does not match "
                           f"vocab_size={cfg.vocab_size} in the config of {path}")
    model = Transformer(cfg)
    state = state_for_loading(state)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise WeightsError(f"{path} does not match its config: missing {missing[:5]}, "
                           f"unexpected {unexpected[:5]}; {FIX_HINT}")
    bad = [(k, tuple(state[k].shape), tuple(v.shape)) for k, v in expected.items()
           if state[k] is not None and state[k].shape != v.shape]
    if bad:
        k, got, want = bad[0]
        raise WeightsError(f"{path}: tensor {k} has shape {got} but the config needs {want}; "
                           f"{FIX_HINT}")
    model.load_state_dict(state)
    return model.to(device).eval(), tok, meta


def load_pretrained(name: str = "shakespeare", device: str | torch.device = "cpu"):
    """The shipped model ``name`` ("shakespeare", the default, or "draft") as (model, tokenizer).

    The model is in eval mode on ``device`` (CPU by default); its metadata is ``model.meta``.
    """
    path = DATA_DIR / f"{name}.safetensors"
    if not path.with_suffix(".json").exists():
        shipped = sorted(p.stem for p in DATA_DIR.glob("*.json"))
        raise WeightsError(f"no shipped model named {name!r} in {DATA_DIR}; available: {shipped}")
    model, tok, meta = load_model(path, device)
    model.meta = meta
    return model, tok
