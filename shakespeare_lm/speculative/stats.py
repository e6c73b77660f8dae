"""What speculative decoding did and what theory predicts: acceptance statistics, the
i.i.d. predictions of tokens per pass and speedup (Leviathan et al. 2023), and Pearson's
chi-square test that checks the output distribution is the target's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import torch


# --- statistics -----------------------------------------------------------------------
@dataclass
class SpeculativeStats:
    """What one ``speculative_decode`` call did."""

    draft: str
    gamma: int
    verifier: str
    target_passes: int = 0            # verification passes (the prompt's prefill not counted)
    drafted: int = 0                  # draft tokens proposed, tested or not
    proposed: int = 0                 # draft tokens put to the test (up to the first rejection)
    accepted: int = 0
    tokens_per_round: list[int] = field(default_factory=list)   # accepted + 1, each pass
    position_tested: list[int] = field(default_factory=list)    # [i]: proposals at draft slot i
    position_accepted: list[int] = field(default_factory=list)
    outcome: list[bool] = field(default_factory=list)   # whether each tested proposal survived
    slot: list[int] = field(default_factory=list)       # its draft slot, 0 .. gamma - 1
    draft_s: float = 0.0              # time spent drafting
    target_s: float = 0.0             # time in verification passes and accept/reject
    _tested_pq: list = field(default_factory=list, repr=False)  # (p, q) rows of tested proposals

    def record(self, rnd) -> None:
        """Add one round's outcome."""
        k, g = rnd.accepted, len(rnd.proposals)
        tested = min(k + 1, g)  # proposals after the first rejection were never tested
        self.target_passes += 1
        self.drafted += g
        self.proposed += tested
        self.accepted += k
        self.tokens_per_round.append(k + 1)
        if tested:  # overlaps are computed when asked for, not while decoding
            self._tested_pq.append((rnd.p[:tested], rnd.q))  # q's rows: read when asked
            self.outcome += [i < k for i in range(tested)]
            self.slot += list(range(tested))
        for i in range(tested):
            self.position_tested[i] += 1
            self.position_accepted[i] += i < k
        self.draft_s += rnd.draft_s
        self.target_s += rnd.target_s

    @property
    def overlap(self) -> list[float]:
        """sum_x min(p, q) = 1 - TV(p, q) of every tested proposal, in order."""
        return [a for p, q in self._tested_pq
                for a in torch.minimum(p, q[: len(p)]).sum(-1).tolist()]

    @property
    def acceptance_rate(self) -> float:
        """Accepted / tested proposals (nan if the draft proposed nothing)."""
        return self.accepted / self.proposed if self.proposed else float("nan")

    @property
    def tokens_per_pass(self) -> float:
        """Tokens emitted per verification pass of the target."""
        if not self.target_passes:
            return float("nan")
        return sum(self.tokens_per_round) / self.target_passes

    @property
    def cost_ratio(self) -> float:
        """Measured seconds per drafted token / seconds per verification pass."""
        if not (self.drafted and self.target_s):
            return float("nan")
        return (self.draft_s / self.drafted) / (self.target_s / self.target_passes)

    @property
    def per_position_acceptance(self) -> list[float]:
        """Acceptance rate at draft slot i, given that slot was reached."""
        return [a / t if t else float("nan")
                for a, t in zip(self.position_accepted, self.position_tested)]

    @property
    def per_position_overlap(self) -> list[float]:
        """Mean sum_x min(p, q) at draft slot i: the acceptance rate the distributions predict."""
        sums = [0.0] * self.gamma
        for i, a in zip(self.slot, self.overlap, strict=True):
            sums[i] += a
        return [s / t if t else float("nan") for s, t in zip(sums, self.position_tested)]

    @property
    def expected_acceptance(self) -> float:
        """Mean of sum_x min(p, q) = 1 - TV(p, q) over the tested proposals."""
        overlap = self.overlap
        return sum(overlap) / len(overlap) if overlap else float("nan")

    def as_dict(self) -> dict:
        skip = ("tokens_per_round", "outcome", "slot", "_tested_pq")
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        d.update(acceptance_rate=self.acceptance_rate, tokens_per_pass=self.tokens_per_pass,
                 cost_ratio=self.cost_ratio, per_position_overlap=self.per_position_overlap,
                 per_position_acceptance=self.per_position_acceptance,
                 expected_acceptance=self.expected_acceptance)
        return d


# --- predictions ----------------------------------------------------------------------
def expected_tokens_per_pass(alpha: float, gamma: int) -> float:
    """Tokens per target pass if each proposal is accepted independently with probability
    alpha: 1 + alpha + ... + alpha^gamma = (1 - alpha^(gamma+1)) / (1 - alpha)."""
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha={alpha!r} is invalid: an acceptance rate must be in [0, 1]")
    return gamma + 1.0 if alpha == 1 else (1 - alpha ** (gamma + 1)) / (1 - alpha)


def expected_accepted(alphas) -> float:
    """Expected accepted proposals before the first rejection when slot i is accepted with
    probability alphas[i] (given the earlier ones were): sum_i prod_{j <= i} alphas[j]."""
    total, survive = 0.0, 1.0
    for a in alphas:
        if not 0 <= a <= 1:
            raise ValueError(f"acceptance {a!r} in alphas is invalid: it must be in [0, 1]")
        survive *= a
        total += survive
    return total


def predicted_speedup(alpha: float, gamma: int, cost_ratio: float) -> float:
    """Wall-clock speedup over plain decoding when a draft step costs ``cost_ratio`` target
    steps and a (gamma + 1)-token verification pass costs one (Leviathan et al. 2023, eq. 1):
    tokens per pass / (gamma * cost_ratio + 1)."""
    if cost_ratio < 0:
        raise ValueError(f"cost_ratio={cost_ratio!r} is invalid: it must be >= 0")
    return expected_tokens_per_pass(alpha, gamma) / (gamma * cost_ratio + 1)


def chi_square_test(counts, probs, min_expected: float = 5.0) -> tuple[float, int, float]:
    """Pearson's goodness-of-fit test of observed ``counts`` (V,) against ``probs`` (V,).

    Categories expected fewer than ``min_expected`` times are pooled into one. Returns
    (statistic, degrees of freedom, p-value); the p-value is the chi-square upper tail.
    """
    counts = torch.as_tensor(counts, dtype=torch.float64).flatten()
    probs = torch.as_tensor(probs, dtype=torch.float64).flatten()
    n = counts.sum()
    expected = n * probs / probs.sum()
    small = expected < min_expected
    obs = torch.cat([counts[~small], counts[small].sum()[None]])
    exp = torch.cat([expected[~small], expected[small].sum()[None]])
    if exp[-1] == 0:
        if obs[-1] > 0:  # a category the target never produces was produced
            return math.inf, int(len(obs) - 2), 0.0
        obs, exp = obs[:-1], exp[:-1]
    stat = float(((obs - exp) ** 2 / exp).sum())
    dof = len(obs) - 1
    if dof < 1:
        raise ValueError("chi_square_test needs at least two categories with enough expected "
                         f"counts; got {len(obs)} (draw more samples)")
    p_value = float(torch.special.gammaincc(torch.tensor(dof / 2.0, dtype=torch.float64),
                                            torch.tensor(stat / 2.0, dtype=torch.float64)))
    return stat, dof, p_value
