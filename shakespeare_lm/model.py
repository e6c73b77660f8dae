"""A small decoder-only transformer with a preallocated KV cache.

Pre-LayerNorm blocks, causal self-attention, a GELU MLP, learned positions and tied input
and output embeddings (Radford et al. 2019), written out so that attention can use the cache.
Shape comments use B batch, T query length, S key length, nh heads, hs head size, C d_model.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = 63
    block_size: int = 256  # context window in characters
    n_layer: int = 4
    n_head: int = 4
    d_model: int = 192
    dropout: float = 0.0

    def __post_init__(self):
        if self.d_model % self.n_head:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_head={self.n_head}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_head

    def to_dict(self) -> dict:
        return asdict(self)


PRESETS: dict[str, ModelConfig] = {
    # the book's model: about 1.8M parameters, a 256-character context
    "shakespeare": ModelConfig(block_size=256, n_layer=4, n_head=4, d_model=192),
    # the draft for speculative decoding: about 30x fewer parameters
    "draft": ModelConfig(block_size=256, n_layer=1, n_head=2, d_model=64),
    # for tests: builds and runs in milliseconds
    "tiny": ModelConfig(block_size=64, n_layer=2, n_head=2, d_model=32),
}


class KVCache(nn.Module):
    """Preallocated keys and values for every slot of a generation, one per layer.

    Slots are columns of the cache; ``update`` writes new keys and values at ``input_pos``.
    """

    def __init__(self, batch: int, n_head: int, max_len: int, head_dim: int,
                 dtype=torch.float32, device=None):
        super().__init__()
        shape = (batch, n_head, max_len, head_dim)  # (B, nh, L, hs)
        self.register_buffer("k_cache", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape, dtype=dtype, device=device), persistent=False)

    @property
    def max_len(self) -> int:
        return self.k_cache.shape[2]

    def update(self, input_pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        """Write k, v (B, nh, T, hs) at slots input_pos (T,); return the whole cache."""
        self.k_cache[:, :, input_pos] = k
        self.v_cache[:, :, input_pos] = v
        return self.k_cache, self.v_cache

    def reset(self) -> None:
        self.k_cache.zero_()
        self.v_cache.zero_()

    def truncate(self, length: int) -> None:
        """Forget every slot from ``length`` on (used to roll back rejected draft tokens)."""
        self.k_cache[:, :, length:].zero_()
        self.v_cache[:, :, length:].zero_()

    def reorder(self, rows: torch.Tensor) -> None:
        """Keep cache rows ``rows`` (beam search re-ranking): row i becomes old row rows[i]."""
        self.k_cache = self.k_cache.index_select(0, rows)
        self.v_cache = self.v_cache.index_select(0, rows)

    @property
    def nbytes(self) -> int:
        return self.k_cache.nbytes + self.v_cache.nbytes


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_head, self.head_dim = cfg.n_head, cfg.head_dim
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.dropout = cfg.dropout
        self.kv_cache: KVCache | None = None

    def forward(self, x, input_pos=None, mask=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        # (B, T, C) -> (B, nh, T, hs)
        q, k, v = (t.view(B, T, self.n_head, self.head_dim).transpose(1, 2) for t in (q, k, v))
        if self.kv_cache is None:
            y = F.scaled_dot_product_attention(
                q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0)
        else:
            k_all, v_all = self.kv_cache.update(input_pos, k, v)
            S = mask.shape[-1]  # only the slots up to the last query can be visible
            y = F.scaled_dot_product_attention(q, k_all[:, :, :S], v_all[:, :, :S], attn_mask=mask)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, nh, T, hs) -> (B, T, C)
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.fc = nn.Linear(cfg.d_model, 4 * cfg.d_model)
        self.proj = nn.Linear(4 * cfg.d_model, cfg.d_model)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = MLP(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, input_pos=None, mask=None):
        x = x + self.drop(self.attn(self.ln1(x), input_pos, mask))  # pre-LN residual
        return x + self.drop(self.mlp(self.ln2(x)))


class Transformer(nn.Module):
    """Character-level GPT. ``model(idx)`` -> logits (B, T, V) over the full sequence."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.config = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.block_size, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.tok_emb.weight  # tied embeddings
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2: scale residual projections by depth
            if name.endswith("proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))
        self.pad: torch.Tensor | None = None  # (B,) left-padding per row while a cache is set

    @staticmethod
    def _init_weights(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def num_params(self, include_positions: bool = True) -> int:
        n = sum(p.numel() for p in self.parameters())  # tied weights counted once
        return n if include_positions else n - self.pos_emb.weight.numel()

    # --- KV cache -------------------------------------------------------------------
    def setup_cache(self, batch: int, max_len: int, pad: torch.Tensor | None = None) -> None:
        """Allocate a KV cache of ``max_len`` slots for ``batch`` rows in every layer.

        ``pad`` (B,) gives how many leading slots of each row are left padding: they are
        never attended to, and positions count from the first real token of each row.
        """
        p = next(self.parameters())
        for blk in self.blocks:
            blk.attn.kv_cache = KVCache(batch, self.config.n_head, max_len, self.config.head_dim,
                                        dtype=p.dtype, device=p.device)
        self.pad = (torch.zeros(batch, dtype=torch.long, device=p.device) if pad is None
                    else pad.to(p.device))

    def clear_cache(self) -> None:
        for blk in self.blocks:
            blk.attn.kv_cache = None
        self.pad = None

    @property
    def kv_caches(self) -> list[KVCache]:
        return [blk.attn.kv_cache for blk in self.blocks if blk.attn.kv_cache is not None]

    def reset_cache(self) -> None:
        for c in self.kv_caches:
            c.reset()

    def reorder_cache(self, rows: torch.Tensor) -> None:
        for c in self.kv_caches:
            c.reorder(rows)
        self.pad = self.pad.index_select(0, rows)

    def truncate_cache(self, length: int) -> None:
        for c in self.kv_caches:
            c.truncate(length)

    @property
    def cache_nbytes(self) -> int:
        return sum(c.nbytes for c in self.kv_caches)

    # --- forward --------------------------------------------------------------------
    def forward(self, idx: torch.Tensor, input_pos: torch.Tensor | None = None,
                return_hidden: bool = False):
        """idx (B, T) -> logits (B, T, V).

        Without ``input_pos``: a plain causal pass over the whole sequence, no cache.
        With ``input_pos`` (T,) increasing slot numbers: write this chunk's keys and values
        into the cache (``setup_cache`` first) and attend to every earlier slot of the row.
        """
        B, T = idx.shape
        if input_pos is None:
            if T > self.config.block_size:
                raise ValueError(f"sequence of {T} tokens exceeds the context of "
                                 f"{self.config.block_size}")
            pos = torch.arange(T, device=idx.device).expand(B, T)
            mask = None
        else:
            if not self.kv_caches:
                raise RuntimeError("input_pos given but no KV cache: call setup_cache(batch, max_len)")
            pad = self.pad[:, None]                                  # (B, 1)
            pos = (input_pos[None, :] - pad).clamp(min=0)            # (B, T) position of each slot
            if int(pos.max()) >= self.config.block_size:
                raise ValueError(f"position {int(pos.max())} is past the context of "
                                 f"{self.config.block_size}")
            S = int(input_pos[-1]) + 1
            slots = torch.arange(S, device=idx.device)
            # a query sees earlier real slots of its row; a padding slot sees only itself
            visible = (slots[None, None, :] <= input_pos[None, :, None]) & (slots >= pad)[:, None, :]
            mask = (visible | (slots[None, None, :] == input_pos[None, :, None]))[:, None]  # (B,1,T,S)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        for blk in self.blocks:
            x = blk(x, input_pos, mask)
        h = self.ln_f(x)
        logits = self.lm_head(h)
        return (logits, h) if return_hidden else logits


def make_model(preset: str | ModelConfig = "tiny", seed: int = 0, **overrides) -> Transformer:
    """A freshly initialised model from a preset name or config; seeded, in eval mode."""
    cfg = PRESETS[preset] if isinstance(preset, str) else preset
    if overrides:
        cfg = ModelConfig(**{**cfg.to_dict(), **overrides})
    torch.manual_seed(seed)
    return Transformer(cfg).eval()
