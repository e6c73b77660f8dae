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

from .checks import check_count


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

    Slots are columns of the cache; ``update`` writes new keys and values at ``slots``.
    Only ``KVCacheHandle`` changes it.
    """

    def __init__(self, batch: int, n_head: int, max_len: int, head_dim: int,
                 dtype=torch.float32, device=None):
        super().__init__()
        shape = (batch, n_head, max_len, head_dim)  # (B, nh, L, hs)
        for name in ("k_cache", "v_cache"):
            self.register_buffer(name, torch.zeros(shape, dtype=dtype, device=device),
                                 persistent=False)

    @property
    def max_len(self) -> int:
        return self.k_cache.shape[2]

    def update(self, slots: slice | torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        """Write k, v (B, nh, T, hs) at ``slots`` (a slice, or T slot numbers); return the
        whole cache."""
        k_cache, v_cache = self._buffers["k_cache"], self._buffers["v_cache"]
        if isinstance(slots, slice):  # consecutive slots: a plain copy into a view, which
            # costs less than indexing's general path and writes the same values
            k_cache.narrow(2, slots.start, slots.stop - slots.start).copy_(k)
            v_cache.narrow(2, slots.start, slots.stop - slots.start).copy_(v)
        else:
            k_cache[:, :, slots] = k
            v_cache[:, :, slots] = v
        return k_cache, v_cache

    def reorder(self, rows: torch.Tensor) -> None:
        """Keep cache rows ``rows`` (beam search re-ranking): row i becomes old row rows[i]."""
        self.k_cache = self.k_cache.index_select(0, rows)
        self.v_cache = self.v_cache.index_select(0, rows)

    @property
    def nbytes(self) -> int:
        return self.k_cache.nbytes + self.v_cache.nbytes


@dataclass(frozen=True)
class Attend:
    """What one cached pass's attention does in every layer: write the chunk's keys and
    values at ``slots`` (a slice or T slot numbers), then let each query read slots
    0..``length``-1 under ``mask`` (None: every one of them)."""

    slots: slice | torch.Tensor
    length: int
    mask: torch.Tensor | None


class KVCacheHandle:
    """The KV cache of one generation: every layer's keys and values and each row's left
    padding. Made by ``Transformer.cache``; nothing outside this file touches its buffers.

    Slots are columns: a forward pass with ``input_pos`` writes its keys and values there.
    ``reorder`` (beam re-ranking), ``truncate`` (speculative rollback), ``copy_slot``
    (contrastive search's winners), ``park`` and ``set_padding`` (rows that stop or join)
    and ``drop_oldest`` (a serving engine's sliding cache) are the only ways to change it.
    """

    def __init__(self, model: Transformer, batch: int, max_len: int, pad: torch.Tensor | None):
        check_count("batch", batch, 1)
        check_count("max_len", max_len, 1)
        p = next(model.parameters())
        cfg = model.config
        self.model, self.batch, self.max_len = model, batch, max_len
        self.layers = [KVCache(batch, cfg.n_head, max_len, cfg.head_dim, dtype=p.dtype,
                               device=p.device) for _ in model.blocks]
        self.pad = (torch.zeros(batch, dtype=torch.long, device=p.device) if pad is None
                    else torch.as_tensor(pad, device=p.device).clone())
        if tuple(self.pad.shape) != (batch,):
            raise ValueError(f"pad has shape {tuple(self.pad.shape)}; it must be ({batch},), "
                             "one left-padding count per row")
        self._padded = bool(self.pad.any())
        self.length = 0  # slots 0..length-1 hold keys and values that may be read
        self._causal: torch.Tensor | None = None  # (max_len, max_len) lower triangle, on demand
        self._slots = torch.arange(max_len, device=p.device)  # slot numbers, sliced per pass
        model._attach(self.layers)

    def __repr__(self) -> str:
        return f"batch {self.batch}, {self.max_len} slots"

    def __enter__(self) -> KVCacheHandle:
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def close(self) -> None:
        """Free the cache: the model runs without one again."""
        if self.model._cache is self:
            self.model._attach(None)
            self.model._cache = None

    @property
    def nbytes(self) -> int:
        return sum(c.nbytes for c in self.layers)

    def plan(self, idx: torch.Tensor, input_pos: torch.Tensor) -> tuple[torch.Tensor, Attend]:
        """For a chunk idx (B, T) at slots input_pos (T,): each token's position (counted from
        its row's first real slot) and what its attention writes and reads (``Attend``).

        Rows without padding that fill consecutive slots first..end-1 (every decode step and
        verification pass outside a left-padded batch) write a slice and use the causal mask
        made once per cache, or none for a single query, which sees every slot it is given.
        Otherwise each pass builds its own boolean mask from the padding."""
        B, T, block = idx.shape[0], idx.shape[1], self.model.config.block_size
        if self.batch != B:
            raise ValueError(f"idx has {B} rows but the KV cache was set up for batch "
                             f"{self.batch}: feed one row per cache row")
        slots_fed = input_pos.tolist()
        first, end = slots_fed[0], slots_fed[-1] + 1
        if self.max_len < end:
            raise ValueError(f"input_pos reaches slot {end - 1} but the KV cache holds "
                             f"{self.max_len} slots (0..{self.max_len - 1}); set it up with "
                             f"max_len >= {end}: model.cache(batch, max_len)")
        self.length = max(self.length, end)  # this pass writes slots up to end - 1
        if end - first == T and not self._padded:
            if end > block:
                raise ValueError(f"position {end - 1} is past the context of {block}")
            return self._slots[first:end], Attend(slice(first, end), end,
                                                  self._causal_mask(first, end))
        pad = self.pad[:, None]                                      # (B, 1)
        pos = (input_pos[None, :] - pad).clamp(min=0)                # (B, T) position of each slot
        if int(pos.max()) >= block:
            raise ValueError(f"position {int(pos.max())} is past the context of {block}")
        slots = self._slots[:end]
        # a query sees earlier real slots of its row; a padding slot sees only itself
        visible = (slots[None, None, :] <= input_pos[None, :, None]) & (slots >= pad)[:, None, :]
        mask = (visible | (slots[None, None, :] == input_pos[None, :, None]))[:, None]  # (B,1,T,S)
        return pos, Attend(input_pos, end, mask)

    def _causal_mask(self, first: int, end: int) -> torch.Tensor | None:
        """The (T, end) additive mask of queries at slots first..end-1 over slots 0..end-1:
        each sees itself and every earlier slot. None for one query."""
        if end - first == 1:
            return None
        if self._causal is None:  # additive: 0 where visible, -inf elsewhere, which is what
            # attention turns a boolean mask into on every call; made once here instead
            dtype = self.layers[0].k_cache.dtype
            visible = torch.ones(self.max_len, self.max_len, dtype=torch.bool,
                                 device=self.pad.device).tril()
            self._causal = torch.zeros(visible.shape, dtype=dtype, device=visible.device
                                       ).masked_fill_(~visible, float("-inf"))
        return self._causal[first:end, :end]

    def truncate(self, length: int) -> None:
        """Forget every slot from ``length`` on (roll back rejected draft tokens).

        A length reset, not a wipe: a query at slot s attends only to slots <= s, and every
        slot is written before it is read, so what lies past ``length`` is never seen and
        the next pass overwrites it. Costs nothing, however many slots are dropped."""
        check_count("length", length, 0, self.max_len, " (the slots to keep)")
        self.length = min(self.length, length)

    def reorder(self, rows: torch.Tensor) -> None:
        """Row i becomes old row rows[i] (beam re-ranking; rows may repeat or shrink)."""
        for c in self.layers:
            c.reorder(rows)
        self.pad = self.pad.index_select(0, rows)
        self._padded = bool(self.pad.any())
        self.batch = len(rows)

    def copy_slot(self, slot: int, rows: torch.Tensor) -> None:
        """Slot ``slot`` of row i becomes that of old row rows[i]; other slots stay."""
        for c in self.layers:
            c.k_cache[:, :, slot] = c.k_cache[rows, :, slot]
            c.v_cache[:, :, slot] = c.v_cache[rows, :, slot]

    def park(self, min_pad: int) -> None:
        """Raise every row's padding to at least ``min_pad``: a row whose window is full
        (its outputs are discarded) then keeps its positions inside the context."""
        if min_pad > 0:
            self.pad.clamp_(min=min_pad)
            self._padded = bool(self.pad.any())

    def set_padding(self, pad) -> None:
        """Each row's left padding from now on (B,): a row that starts a new text at slot s
        gets padding s, so it sees only its own slots."""
        self.pad = torch.as_tensor(pad, device=self.pad.device).clone()
        self._padded = bool(self.pad.any())

    def drop_oldest(self, shift: int) -> None:
        """Shift every row ``shift`` slots left, dropping its oldest slots (and padding)."""
        for c in self.layers:
            for buf in (c.k_cache, c.v_cache):  # (B, nh, L, hs)
                buf[:, :, : buf.shape[2] - shift] = buf[:, :, shift:].clone()
        self.pad = (self.pad - shift).clamp(min=0)
        self._padded = bool(self.pad.any())
        self.length = max(0, self.length - shift)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_head, self.head_dim = cfg.n_head, cfg.head_dim
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.dropout = cfg.dropout
        self.kv_cache: KVCache | None = None

    def forward(self, x, attend: Attend | None = None):
        return self.proj(self.mix(self.qkv(x), attend))

    def mix(self, qkv: torch.Tensor, attend: Attend | None) -> torch.Tensor:
        """The heads' attention from the projected queries, keys and values qkv (B, T, 3C),
        with the heads merged again: (B, T, C), before the output projection."""
        B, T, C = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
        # (B, T, 3C) -> (B, nh, T, hs) each
        q, k, v = qkv.view(B, T, 3, self.n_head, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        if attend is None:
            y = F.scaled_dot_product_attention(
                q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0)
        else:
            k_all, v_all = self.kv_cache.update(attend.slots, k, v)
            S = attend.length  # only the slots up to the last query can be visible
            y = F.scaled_dot_product_attention(q, k_all.narrow(2, 0, S), v_all.narrow(2, 0, S),
                                               attn_mask=attend.mask)
        return y.transpose(1, 2).reshape(B, T, C)  # (B, nh, T, hs) -> (B, T, C)


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

    def forward(self, x, attend: Attend | None = None):
        x = x + self.drop(self.attn(self.ln1(x), attend))  # pre-LN residual
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
        self._cache: KVCacheHandle | None = None  # set by ``cache()``, one at a time

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
    def cache(self, batch: int, max_len: int, pad: torch.Tensor | None = None) -> KVCacheHandle:
        """Allocate a KV cache of ``max_len`` slots for ``batch`` rows in every layer, as a
        handle: ``with model.cache(batch, max_len, pad) as cache: ...`` frees it at the end.

        ``pad`` (B,) gives how many leading slots of each row are left padding: they are
        never attended to, and positions count from the first real token of each row.
        """
        if self._cache is not None:
            raise RuntimeError(f"a KV cache is already set up on this model ({self._cache}); "
                               "finish the `with model.cache(...)` block that made it first")
        self._cache = KVCacheHandle(self, batch, max_len, pad)
        return self._cache

    @property
    def active_cache(self) -> KVCacheHandle | None:
        """The handle of the KV cache in use, or None."""
        return self._cache

    def _attach(self, caches: list[KVCache] | None) -> None:
        for blk, c in zip(self.blocks, caches or [None] * len(self.blocks)):
            blk.attn.kv_cache = c

    # --- forward --------------------------------------------------------------------
    def forward(self, idx: torch.Tensor, input_pos: torch.Tensor | None = None,
                return_hidden: bool = False):
        """idx (B, T) -> logits (B, T, V).

        Without ``input_pos``: a plain causal pass over the whole sequence, no cache.
        With ``input_pos`` (T,) increasing slot numbers, inside ``with model.cache(...)``:
        write this chunk's keys and values into the cache and attend to every earlier slot
        of the row. One path either way: every module is called, so a forward hook sees
        every pass.
        """
        B, T = idx.shape
        if input_pos is None:
            if self._cache is not None:
                raise RuntimeError(
                    f"model(idx) without input_pos while a KV cache is set up ({self._cache}): "
                    "pass input_pos (T,) to run on the cache, or call the model outside the "
                    "`with model.cache(...)` block for a plain pass")
            if self.config.block_size < T:
                raise ValueError(f"sequence of {T} tokens exceeds the context of "
                                 f"{self.config.block_size}")
            pos, attend = torch.arange(T, device=idx.device), None
        else:
            if self._cache is None:
                raise RuntimeError("input_pos given but no KV cache: run the model inside "
                                   "`with model.cache(batch, max_len) as cache:`")
            pos, attend = self._cache.plan(idx, input_pos)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))  # (B, T, d_model)
        for blk in self.blocks:
            x = blk(x, attend)
        h = self.ln_f(x)
        logits = self.lm_head(h)  # (B, T, V)
        return (logits, h) if return_hidden else logits


def make_model(preset: str | ModelConfig = "tiny", seed: int = 0, **overrides) -> Transformer:
    """A freshly initialised model from a preset name or config; seeded, in eval mode."""
    cfg = PRESETS[preset] if isinstance(preset, str) else preset
    if overrides:
        cfg = ModelConfig(**{**cfg.to_dict(), **overrides})
    torch.manual_seed(seed)
    return Transformer(cfg).eval()
