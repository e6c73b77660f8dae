"""Train a model on the corpus: ``python -m shakespeare_lm.train --preset shakespeare``.

AdamW with linear warm-up and cosine decay; the schedule runs on progress, the larger of
steps done / ``--max-iters`` and minutes spent / ``--max-minutes``, so a time budget ends
training on a properly decayed learning rate. Every ``--eval-every`` steps the loss on a
fixed sample of held-out windows is printed; the checkpoint (safetensors + JSON, with the
optimizer state) is written to ``runs/PRESET/`` and training resumes from it with
``--resume``. At the end the held-out loss over all held-out text is measured and the
model is written to ``data/PRESET.safetensors`` + ``.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from tqdm.auto import tqdm

from . import corpus
from .model import PRESETS, Transformer, make_model
from .paths import DATA_DIR, RUNS_DIR
from .tokenizer import CharTokenizer
from .weights import save_model, state_for_loading, state_for_saving


def encode_corpus(tok: CharTokenizer, text: str) -> torch.Tensor:
    return torch.tensor(tok.encode(text), dtype=torch.long)


def get_batch(data: torch.Tensor, batch_size: int, block_size: int, gen: torch.Generator):
    """Random windows: inputs (B, T) and next-character targets (B, T)."""
    starts = torch.randint(0, len(data) - block_size - 1, (batch_size,), generator=gen)
    offsets = torch.arange(block_size + 1)
    windows = data[starts[:, None] + offsets]  # (B, T+1)
    return windows[:, :-1], windows[:, 1:]


def heldout_windows(data: torch.Tensor, block_size: int, limit: int | None = None):
    """Non-overlapping windows covering the held-out text: inputs and targets (N, T)."""
    n = (len(data) - 1) // block_size
    if limit is not None:
        n = min(n, limit)
    x = data[: n * block_size].view(n, block_size)
    y = data[1 : n * block_size + 1].view(n, block_size)
    return x, y


@torch.no_grad()
def heldout_nats_per_char(model: Transformer, data: torch.Tensor, limit: int | None = None,
                          batch_size: int = 64) -> float:
    """Mean negative log-likelihood per character (nats) over non-overlapping windows."""
    was_training = model.training
    model.eval()
    x, y = heldout_windows(data, model.config.block_size, limit)
    dev = next(model.parameters()).device
    total = 0.0
    for i in range(0, len(x), batch_size):
        xb, yb = x[i : i + batch_size].to(dev), y[i : i + batch_size].to(dev)
        logits = model(xb)
        total += F.cross_entropy(logits.flatten(0, 1), yb.flatten(), reduction="sum").item()
    model.train(was_training)
    return total / y.numel()


def lr_at(progress: float, base_lr: float, warmup: float = 0.02, floor: float = 0.1) -> float:
    if progress < warmup:
        return base_lr * progress / warmup
    cos = 0.5 * (1 + math.cos(math.pi * min(1.0, (progress - warmup) / (1 - warmup))))
    return base_lr * (floor + (1 - floor) * cos)


def save_checkpoint(run_dir: Path, model, opt, state: dict) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    tensors = {f"model.{k}": v for k, v in state_for_saving(model).items()}
    for i, p in enumerate(model.parameters()):
        for name, t in opt.state.get(p, {}).items():
            if torch.is_tensor(t) and t.dim() > 0:
                tensors[f"optim.{i}.{name}"] = t.contiguous()
            elif name == "step":
                state["adam_step"] = float(t)
    save_file(tensors, str(run_dir / "checkpoint.safetensors"))
    (run_dir / "checkpoint.json").write_text(json.dumps(state, indent=2))


def load_checkpoint(run_dir: Path, model, opt) -> dict:
    state = json.loads((run_dir / "checkpoint.json").read_text())
    tensors = load_file(str(run_dir / "checkpoint.safetensors"))
    model.load_state_dict(state_for_loading({k[6:]: v for k, v in tensors.items()
                                             if k.startswith("model.")}))
    for i, p in enumerate(model.parameters()):
        if f"optim.{i}.exp_avg" in tensors:
            opt.state[p] = {"step": torch.tensor(state["adam_step"]),
                            "exp_avg": tensors[f"optim.{i}.exp_avg"],
                            "exp_avg_sq": tensors[f"optim.{i}.exp_avg_sq"]}
    return state


def make_optimizer(model: Transformer, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW with weight decay on the matrices only (not on biases and LayerNorm gains)."""
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.99))


def train_step(model: Transformer, opt, train_data: torch.Tensor, batch_size: int, seed: int,
               step: int, lr: float) -> float:
    """One optimiser step at learning rate ``lr`` on the batch of ``step`` (its data order
    depends only on ``seed`` and ``step``, so a resumed run sees the same batches); the loss."""
    for group in opt.param_groups:
        group["lr"] = lr
    gen = torch.Generator().manual_seed(seed * 100_003 + step)  # resumable data order
    x, y = get_batch(train_data, batch_size, model.config.block_size, gen)
    loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss.item()


def _evaluate(model, held_data, eval_windows: int, step: int, elapsed: float, state: dict,
              bar) -> None:
    """Add a held-out sample evaluation at ``step`` to ``state["history"]``."""
    held = heldout_nats_per_char(model, held_data, limit=eval_windows)
    state["history"].append({"step": step, "minutes": round(elapsed / 60, 2),
                             "heldout_sample_nats_per_char": round(held, 4)})
    bar.write(f"step {step}: held-out sample {held:.4f} nats/char, {elapsed / 60:.1f} min")
    state.update(step=step, elapsed_s=elapsed)


def train(preset: str = "shakespeare", max_iters: int = 5000, max_minutes: float = 60.0,
          batch_size: int = 32, lr: float = 2e-3, weight_decay: float = 0.1,
          eval_every: int = 250, eval_windows: int = 64, seed: int = 1337,
          resume: bool = False, out: Path | None = DATA_DIR, run_dir: Path | None = None,
          train_text: str | None = None, heldout_text: str | None = None,
          progress: bool = True, command: str | None = None) -> tuple[Transformer, dict]:
    """Train ``preset`` and return (model, record). Writes ``out/PRESET.safetensors``."""
    train_text = corpus.load_train() if train_text is None else train_text
    heldout_text = corpus.load_heldout() if heldout_text is None else heldout_text
    tok = CharTokenizer(corpus.ALPHABET)
    train_data, held_data = encode_corpus(tok, train_text), encode_corpus(tok, heldout_text)
    model = make_model(preset, seed=seed, vocab_size=tok.vocab_size).train()
    opt = make_optimizer(model, lr, weight_decay)
    run_dir = run_dir or RUNS_DIR / preset
    state = {"step": 0, "elapsed_s": 0.0, "history": []}
    if resume and (run_dir / "checkpoint.json").exists():
        state = load_checkpoint(run_dir, model, opt)
        print(f"resumed from {run_dir} at step {state['step']} ({state['elapsed_s'] / 60:.1f} min)")
    start = time.perf_counter() - state["elapsed_s"]
    bar = tqdm(total=max_iters, initial=state["step"], disable=not progress, desc=f"train {preset}")
    step = state["step"]
    while True:
        elapsed = time.perf_counter() - start
        frac = max(step / max_iters, elapsed / (60 * max_minutes))
        last = frac >= 1.0
        evaluated = state["history"] and state["history"][-1]["step"] == step  # just resumed
        if (step % eval_every == 0 or last) and not evaluated:
            _evaluate(model, held_data, eval_windows, step, elapsed, state, bar)
            save_checkpoint(run_dir, model, opt, state)
        if last:
            break
        step_lr = lr_at(frac, lr)
        loss = train_step(model, opt, train_data, batch_size, seed, step, step_lr)
        step += 1
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.3f}", lr=f"{step_lr:.2e}")
    bar.close()
    model.eval()
    record = _record(model, preset, held_data, eval_windows, train_text, heldout_text, step,
                     batch_size, lr, seed, start, command, state["history"])
    if out is not None:
        path = save_model(model, tok, Path(out) / f"{preset}.safetensors", **record)
        print(f"wrote {path}: held-out {record['heldout_nats_per_char']:.4f} nats/char after "
              f"{step} steps, {record['wall_time_minutes']} min")
    return model, record


def _record(model, preset, held_data, eval_windows, train_text, heldout_text, step, batch_size,
            lr, seed, start, command, history) -> dict:
    """What a finished run saves with its weights: the held-out score and how it was made."""
    full = heldout_nats_per_char(model, held_data)
    sample = heldout_nats_per_char(model, held_data, limit=eval_windows)
    return {
        "preset": preset, "parameters": model.num_params(),
        "heldout_nats_per_char": round(full, 4),
        "heldout_sample_windows": eval_windows,
        "heldout_sample_nats_per_char": sample,
        "train_sha256": corpus.sha256_text(train_text),
        "heldout_sha256": corpus.sha256_text(heldout_text),
        "steps": step, "batch_size": batch_size, "lr": lr, "seed": seed,
        "tokens_seen": step * batch_size * model.config.block_size,
        "wall_time_minutes": round((time.perf_counter() - start) / 60, 2),
        "torch_threads": torch.get_num_threads(),
        "command": command or "python -m shakespeare_lm.train " + shlex.join(sys.argv[1:]),
        "history": history,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="Train a character-level Shakespeare model.")
    p.add_argument("--preset", default="shakespeare", choices=sorted(PRESETS))
    p.add_argument("--max-iters", type=int, default=5000)
    p.add_argument("--max-minutes", type=float, default=60.0)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--resume", action="store_true", help="continue from runs/PRESET/checkpoint")
    p.add_argument("--out", type=Path, default=DATA_DIR)
    a = p.parse_args(argv)
    train(a.preset, a.max_iters, a.max_minutes, a.batch_size, a.lr, eval_every=a.eval_every,
          seed=a.seed, resume=a.resume, out=a.out)


if __name__ == "__main__":
    main()
