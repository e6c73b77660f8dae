"""Medusa-style draft heads on the frozen main model.

Train them with ``python -m shakespeare_lm.speculative.heads --train``.

Head i (i = 1..n) reads the main model's last hidden state h_t (after the final LayerNorm)
and predicts the character i positions past the next one, x_{t+1+i}, with one residual
block and the main model's own (tied, frozen) unembedding (Cai et al. 2024, "Medusa"):

    logits_i(h) = W_unembed (h + SiLU(W_i h + b_i))

W_i starts at zero, so each head starts as the next-token predictor. Gloeckle et al. 2024
train such extra heads jointly with the model (multi-token prediction); here only the heads
learn. Speculative decoding uses their softmax as the draft q (``speculative.HeadsDraft``),
so the output keeps exactly the target's distribution.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ..checks import check_count
from ..corpus import load_heldout, load_train, sha256_file
from ..model import Transformer
from ..paths import DATA_DIR, TRAIN_FILE

HEADS_FILE = DATA_DIR / "heads.safetensors"
HEADS_RECORD = DATA_DIR / "heads.json"
RETRAIN = "retrain them with `python -m shakespeare_lm.speculative.heads --train`"


class DraftHeads(nn.Module):
    """n residual heads over a model's hidden state, sharing its unembedding (Cai et al. 2024)."""

    def __init__(self, model: Transformer, n_heads: int = 3):
        super().__init__()
        check_count("n_heads", n_heads, 1)
        C = model.config.d_model
        self.n_heads = n_heads
        self.blocks = nn.ModuleList(nn.Linear(C, C) for _ in range(n_heads))
        for b in self.blocks:  # zero init: every head starts as the next-token head
            nn.init.zeros_(b.weight)
            nn.init.zeros_(b.bias)
        # (V, C): the main model's tied embedding, frozen and not saved with the heads
        self.register_buffer("unembed", model.lm_head.weight.detach(), persistent=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """h (..., C) -> logits (..., n_heads, V); head i predicts the token i past the next."""
        r = torch.stack([h + F.silu(b(h)) for b in self.blocks], dim=-2)  # (..., n, C)
        return r @ self.unembed.t()

    def state_for_saving(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().contiguous() for k, v in self.blocks.state_dict().items()}


@torch.no_grad()
def hidden_states(model: Transformer, ids: torch.Tensor, window: int) -> torch.Tensor:
    """The model's last hidden states (N, window, C) over ``ids`` (L,) cut into windows."""
    n = len(ids) // window
    windows = ids[: n * window].view(n, window)
    return torch.cat([model(w, return_hidden=True)[1] for w in windows.split(32)])


def head_targets(ids: torch.Tensor, window: int, n_heads: int) -> torch.Tensor:
    """Targets (N, window, n_heads): for position t of a window, x_{t+1+i} for head i;
    -1 (ignored) past the window's end."""
    n = len(ids) // window
    w = ids[: n * window].view(n, window)
    out = torch.full((n, window, n_heads), -1, dtype=torch.long)
    for i in range(1, n_heads + 1):
        out[:, : window - 1 - i, i - 1] = w[:, 1 + i :]
    return out


def top1_acceptance(heads: DraftHeads, h: torch.Tensor, y: torch.Tensor) -> list[float]:
    """Per head: how often its argmax is the character that came, over positions with one."""
    pred = heads(h).argmax(-1)                        # (N, T, n)
    ok = (pred == y) & (y >= 0)
    return [float(ok[..., i].sum() / (y[..., i] >= 0).sum()) for i in range(heads.n_heads)]


def corpus_ids(tok, text: str, n_windows: int, window: int) -> torch.Tensor:
    """``n_windows`` windows spread evenly over ``text``, as one id tensor."""
    step = max(window, (len(text) - window) // n_windows)
    chunks = [text[i : i + window] for i in range(0, len(text) - window + 1, step)][:n_windows]
    return torch.tensor(tok.encode("".join(chunks)))


def train_heads(model: Transformer, tok, n_heads: int = 3, max_minutes: float = 5.0,
                n_windows: int = 1200, batch: int = 4096, lr: float = 3e-3,
                seed: int = 0) -> tuple[DraftHeads, dict]:
    """Fit the heads by cross-entropy on the frozen model's hidden states of the training
    text; returns (heads, record with held-out per-head top-1 acceptance)."""
    t0 = time.perf_counter()
    torch.manual_seed(seed)
    W = model.config.block_size
    train_ids = corpus_ids(tok, load_train(), n_windows, W)
    h = hidden_states(model, train_ids, W).flatten(0, 1)               # (N*W, C)
    y = head_targets(train_ids, W, n_heads).flatten(0, 1)              # (N*W, n)
    heads = DraftHeads(model, n_heads)
    opt = torch.optim.AdamW(heads.blocks.parameters(), lr=lr, weight_decay=0.0)
    step, loss, deadline = 0, torch.tensor(float("nan")), t0 + 60 * max_minutes
    while time.perf_counter() < deadline:
        rows = torch.randint(len(h), (batch,))
        logits = heads(h[rows])                                        # (batch, n, V)
        loss = F.cross_entropy(logits.flatten(0, 1), y[rows].flatten(), ignore_index=-1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
    held_ids = corpus_ids(tok, load_heldout(), 100, W)
    with torch.no_grad():
        acc = top1_acceptance(heads, hidden_states(model, held_ids, W),
                              head_targets(held_ids, W, n_heads))
    record = {"n_heads": n_heads, "steps": step, "batch": batch, "lr": lr, "seed": seed,
              "train_positions": len(h), "final_train_loss": round(float(loss.detach()), 4),
              "heldout_top1_acceptance": [round(a, 4) for a in acc],
              "train_sha256": sha256_file(TRAIN_FILE),
              "wall_time_minutes": round((time.perf_counter() - t0) / 60, 2),
              "torch_threads": torch.get_num_threads()}
    return heads, record


def save_trained(state: dict[str, torch.Tensor], record: dict, path: str | Path) -> Path:
    """Write trained weights (safetensors) and their record (json beside them)."""
    path = Path(path)
    save_file(state, str(path))
    path.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
    return path


def read_trained(path: str | Path, what: str, retrain: str) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file of trained ``what``; a missing or unreadable file
    is a clear error that says how to ``retrain``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no {what} at {path}; {retrain}")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError) as e:
        raise ValueError(f"{path} is not a readable safetensors file ({e}); {retrain}") from e


def save_heads(heads: DraftHeads, record: dict, path: str | Path = HEADS_FILE) -> Path:
    """Write the heads' weights (safetensors) and their record (json beside it)."""
    return save_trained(heads.state_for_saving(), record, path)


def load_heads(model: Transformer, path: str | Path = HEADS_FILE) -> DraftHeads:
    """The shipped draft heads for ``model`` (the main model they were trained on)."""
    state = read_trained(path, "draft heads", RETRAIN)
    n = sum(k.endswith(".weight") for k in state)
    heads = DraftHeads(model, max(n, 1))
    C = model.config.d_model
    bad = {k: tuple(v.shape) for k, v in state.items() if v.shape[0] != C}
    if n == 0 or bad:
        raise ValueError(f"{path} does not hold heads for a model of d_model={C} "
                         f"(found {bad or 'no weights'}); {RETRAIN}")
    try:
        heads.blocks.load_state_dict(state)
    except RuntimeError as e:
        raise ValueError(f"{path} does not match DraftHeads({n} heads): {e}; {RETRAIN}") from e
    return heads.to(model.lm_head.weight.device).eval().requires_grad_(False)


def train_command(argv: list[str] | None, module: str, description: str, train, save,
                  minutes: float, options: dict[str, int] | None = None) -> None:
    """The command line that trains a draft part on the frozen shipped model and writes it
    under data/: ``--train``, ``--max-minutes``, ``--threads`` and the integer ``options``
    (flag -> default), which ``train(model, tok, max_minutes=..., **options)`` takes by
    name; ``save(part, record)`` writes the result."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--train", action="store_true", help="train it and write it under data/")
    for flag, default in (options or {}).items():
        p.add_argument(flag, type=int, default=default)
    p.add_argument("--max-minutes", type=float, default=minutes)
    p.add_argument("--threads", type=int, default=2)
    a = vars(p.parse_args(argv))
    if not a["train"]:
        p.error("nothing to do: pass --train")
    from ..weights import load_pretrained

    torch.set_num_threads(a["threads"])
    model, tok = load_pretrained()
    chosen = {f.lstrip("-").replace("-", "_"): f for f in options or {}}
    part, record = train(model, tok, max_minutes=a["max_minutes"],
                         **{k: a[k] for k in chosen})
    flags = "".join(f"{f} {a[k]} " for k, f in chosen.items())
    record["command"] = f"python -m {module} --train {flags}--max-minutes {a['max_minutes']:g}"
    print(json.dumps(record, indent=2))
    print("wrote", save(part, record))


def main(argv: list[str] | None = None) -> None:
    train_command(argv, "shakespeare_lm.speculative.heads", __doc__.splitlines()[0],
                  train_heads, save_heads, 5.0, {"--n-heads": 3})


if __name__ == "__main__":
    main()
