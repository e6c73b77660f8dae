"""An EAGLE-style feature head on the frozen main model.

Train it with ``python -m shakespeare_lm.speculative.eagle --train``.

Medusa's heads (``speculative.heads``) guess the i-th character ahead from one hidden state,
blind to the characters in between. EAGLE (Li et al. 2024) instead predicts the target's
next *feature*, its last hidden state, from the current one and the character just read,
and reads it out with the target's own unembedding:

    h'_{t+1} = LN(h_t + W_2 SiLU(W_1 [h_t ; e(x_{t+1})] + b_1) + b_2)
    q(x_{t+2}) = softmax(W_E h'_{t+1})

Fed its own prediction and the character it drafted, it drafts a chain: the second guess
sees the first. It is trained on the frozen model's features of the training text, to
match the model's next-character distribution (KL) at each of the first ``DEPTH`` steps of
such a chain and, at the first step, the feature itself (squared error).
"""

from __future__ import annotations

import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..checks import check_count
from ..corpus import load_heldout, load_train, sha256_file
from ..model import Transformer
from ..paths import DATA_DIR, TRAIN_FILE
from .heads import corpus_ids, hidden_states, read_trained, save_trained, train_command

FEATURE_FILE = DATA_DIR / "eagle.safetensors"
RETRAIN = "retrain it with `python -m shakespeare_lm.speculative.eagle --train`"
DEPTH_WEIGHTS = (1.0, 0.8, 0.6, 0.4)  # the loss's weight at each chain step training unrolls
DEPTH = len(DEPTH_WEIGHTS)
FEATURE_WEIGHT = 0.1


class FeatureHead(nn.Module):
    """Predicts the target's next last-hidden-state from the current one and the next
    character, with the target's (frozen, tied) embedding and unembedding."""

    def __init__(self, model: Transformer, hidden: int = 768):
        super().__init__()
        check_count("hidden", hidden, 1)
        C = model.config.d_model
        self.fc1 = nn.Linear(2 * C, hidden)
        self.fc2 = nn.Linear(hidden, C)
        self.ln = nn.LayerNorm(C)
        # the main model's tied embedding (V, C), frozen and not saved with the head
        self.register_buffer("embed", model.tok_emb.weight.detach(), persistent=False)

    def forward(self, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """h (..., C) the feature after reading x_{<=t}, x (...) the id x_{t+1} -> the
        predicted feature after reading x_{t+1} (..., C)."""
        z = torch.cat([h, F.embedding(x, self.embed)], dim=-1)
        return self.ln(h + self.fc2(F.silu(self.fc1(z))))

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """A feature (..., C) -> the next character's logits (..., V), as the target reads one."""
        return h @ self.embed.t()

    def state_for_saving(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().contiguous() for k, v in self.state_dict().items()}


def chain_overlap(head: FeatureHead, ids: torch.Tensor, feats: torch.Tensor,
                  depth: int) -> list[float]:
    """Per chain step k = 1..depth, the mean of sum min(p, q) (the acceptance rate of
    speculative sampling) between the target's p and the head's q, over windows ``ids``
    (N, W) with the target's features ``feats`` (N, W, C), the chain started from the
    target's true feature and fed the text's true characters."""
    W = ids.shape[1]
    h, out = feats[:, : W - depth], []
    for k in range(1, depth + 1):
        h = head(h, ids[:, k : W - depth + k])
        q = torch.softmax(head.logits(h), -1)
        p = torch.softmax(head.logits(feats[:, k : W - depth + k]), -1)
        out.append(float(torch.minimum(p, q).sum(-1).mean()))
    return out


def _chain_loss(head: FeatureHead, ids: torch.Tensor, feats: torch.Tensor,
                rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """The training loss at chain starts (rows, cols) of windows ``ids``/``feats``."""
    h, loss = feats[rows, cols], 0.0
    for k, w in enumerate(DEPTH_WEIGHTS, start=1):
        h = head(h, ids[rows, cols + k])
        target = F.log_softmax(head.logits(feats[rows, cols + k]), -1)
        q = F.log_softmax(head.logits(h), -1)
        loss = loss + w * F.kl_div(q, target, log_target=True, reduction="batchmean")
        if k == 1:
            loss = loss + FEATURE_WEIGHT * ((h - feats[rows, cols + 1]) ** 2).mean()
    return loss


def train_feature_head(model: Transformer, tok, max_minutes: float = 14.0,
                       n_windows: int = 3500, hidden: int = 768, batch: int = 2048,
                       lr: float = 2e-3, seed: int = 0) -> tuple[FeatureHead, dict]:
    """Fit the head on the frozen model's features of the training text (the learning rate
    drops fourfold for the last 30% of the time); returns (head, record with the held-out
    acceptance per chain step)."""
    t0 = time.perf_counter()
    torch.manual_seed(seed)
    W = model.config.block_size
    ids = corpus_ids(tok, load_train(), n_windows, W)
    feats = hidden_states(model, ids, W)                             # (N, W, C)
    ids = ids[: feats.shape[0] * W].view(-1, W)
    head = FeatureHead(model, hidden)
    opt = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=0.0)
    step, loss, deadline = 0, torch.tensor(float("nan")), t0 + 60 * max_minutes
    while (now := time.perf_counter()) < deadline:
        if now > deadline - 0.3 * 60 * max_minutes:
            for group in opt.param_groups:
                group["lr"] = lr / 4
        rows = torch.randint(ids.shape[0], (batch,))
        cols = torch.randint(W - DEPTH, (batch,))
        loss = _chain_loss(head, ids, feats, rows, cols)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
    held = corpus_ids(tok, load_heldout(), 100, W)
    with torch.no_grad():
        held_feats = hidden_states(model, held, W)
        overlap = chain_overlap(head, held[: held_feats.shape[0] * W].view(-1, W), held_feats, 8)
    record = {"hidden": hidden, "depth": DEPTH, "steps": step, "batch": batch, "lr": lr,
              "seed": seed, "train_positions": ids.numel(),
              "final_train_loss": round(float(loss.detach()), 4),
              "heldout_acceptance_by_step": [round(a, 4) for a in overlap],
              "train_sha256": sha256_file(TRAIN_FILE),
              "wall_time_minutes": round((time.perf_counter() - t0) / 60, 2),
              "torch_threads": torch.get_num_threads()}
    return head.eval().requires_grad_(False), record


def save_feature_head(head: FeatureHead, record: dict, path: str | Path = FEATURE_FILE) -> Path:
    """Write the head's weights (safetensors) and its record (json beside it)."""
    return save_trained(head.state_for_saving(), record, path)


def load_feature_head(model: Transformer, path: str | Path = FEATURE_FILE) -> FeatureHead:
    """The shipped feature head for ``model`` (the main model it was trained on)."""
    state = read_trained(path, "feature head", RETRAIN)
    C = model.config.d_model
    fc1 = state.get("fc1.weight")
    if fc1 is None or fc1.ndim != 2 or fc1.shape[1] != 2 * C:
        found = None if fc1 is None else tuple(fc1.shape)
        raise ValueError(f"{path} does not hold a feature head for a model of d_model={C} "
                         f"(fc1.weight should be (hidden, {2 * C}), found {found}); {RETRAIN}")
    head = FeatureHead(model, fc1.shape[0])
    try:
        head.load_state_dict(state)
    except RuntimeError as e:
        raise ValueError(f"{path} does not match FeatureHead: {e}; {RETRAIN}") from e
    return head.to(model.lm_head.weight.device).eval().requires_grad_(False)


def main(argv: list[str] | None = None) -> None:
    train_command(argv, "shakespeare_lm.speculative.eagle", __doc__.splitlines()[0],
                  train_feature_head, save_feature_head, 14.0)


if __name__ == "__main__":
    main()
