/* shakespeare_lm.speculative in JavaScript, the one copy the book's pages run (Leviathan et
   al. 2023; Chen et al. 2023): the n-gram draft of drafts.NGramDraft (its probabilities and
   its draws, operation for operation), one round of algorithm.speculative_round (the draft
   proposes g tokens with their distributions q, the target scores them in one pass, each is
   kept with probability min(1, p/q), the first rejected one is replaced by a draw from the
   residual max(p - q, 0) normalised, and if all are kept a bonus token comes from p) and the
   loop of speculative_decode that emits n tokens window by window, with SpeculativeStats'
   counts. The uniforms are used as Python uses them: g for a round's proposals, then g + 1
   for its tests and the token that ends it, each with drafts.draw's inverse CDF.

   A model is a function from contexts (arrays of ids) to their next-token logits (rows), or
   a Promise of them: the page's model answers later, node's tests at once. A draft is
   {name, logits(context)} (modelDraft wraps a model) or an NGram, which also draws without
   working out whole distributions (sampleChain) when the sampler leaves them as they are.
   tests/site/test_speculative_js.py runs this file in node against Python.

   Browser: a classic script, loaded after decoding.js, that defines window.SlmSpeculative.
   Node: require() it. */
var SlmSpeculative = (function () {
  "use strict";
  var D = typeof SlmDecoding !== "undefined" ? SlmDecoding : require("./decoding.js");
  var WINDOW_FULL = "window_full";  // context_window.WINDOW_FULL: a text waits for its next window

  function sum(xs) { var s = 0; for (var i = 0; i < xs.length; i++) s += xs[i]; return s; }

  // --- the n-gram draft (drafts.NGramDraft) ------------------------------------------------
  /* A character n-gram from its counts, as NGramDraft.counts_by_order gives them (and the
     site's _static/live/ngram.js holds them): `a` = {name, order, smoothing, vocab_size,
     levels}, one level per context length k = 0 .. order - 1: the contexts seen (base-V codes,
     the oldest id most significant, sorted), where each one's followers start (one more
     entry: the end), the followers and their counts. */
  function NGram(a) {
    this.name = a.name; this.order = a.order; this.smoothing = a.smoothing; this.V = a.vocab_size;
    this.levels = a.levels.map(function (l) {
      var totals = new Float64Array(l.starts.length - 1);
      for (var j = 0; j < totals.length; j++) {
        for (var i = l.starts[j]; i < l.starts[j + 1]; i++) totals[j] += l.counts[i];
      }
      return { contexts: l.contexts, starts: l.starts, nexts: l.nexts, counts: l.counts, totals: totals };
    });
  }
  /* Where context `code` of `level` lies in its sorted contexts (-1: never seen). */
  function place(level, code) {
    var lo = 0, hi = level.contexts.length - 1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1, c = level.contexts[mid];
      if (c === code) return mid;
      if (c < code) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
  }
  /* NGramDraft._codes: the codes of the last k ids, k = 0 .. min(order - 1, length). */
  NGram.prototype.codes = function (ids) {
    var codes = [0], code = 0, scale = 1, top = Math.min(this.order - 1, ids.length);
    for (var k = 1; k <= top; k++) {
      code += ids[ids.length - k] * scale;  // the oldest of the last k ids is the most significant
      scale *= this.V;
      codes.push(code);
    }
    return codes;
  };
  /* _Order.level: where the followers of `code` lie at context length k, and their total. */
  NGram.prototype.level = function (k, code) {
    var level = this.levels[k], j = place(level, code);
    return j < 0 ? { a: 0, b: 0, n: 0 } : { a: level.starts[j], b: level.starts[j + 1], n: level.totals[j] };
  };
  /** NGramDraft.probs: P(next | ids) (a Float64Array, V), from the uniform prior up, each
      context length mixing its counts with the estimate one length shorter. */
  NGram.prototype.probs = function (ids) {
    var V = this.V, s = this.smoothing, probs = new Float64Array(V).fill(1 / V), row = new Float64Array(V);
    var codes = this.codes(ids);
    for (var k = 0; k < codes.length; k++) {
      var where = this.level(k, codes[k]), level = this.levels[k];
      row.fill(0);
      for (var i = where.a; i < where.b; i++) row[level.nexts[i]] = level.counts[i];
      for (var v = 0; v < V; v++) probs[v] = (row[v] + s * probs[v]) / (where.n + s);
    }
    return probs;
  };
  /** NGramDraft.distribution: log P(next | ids), the logits a sampler shapes. */
  NGram.prototype.logits = function (ids) { return Array.from(this.probs(ids), Math.log); };
  /* _Order.follower: the follower whose share of the cumulative count covers `target`. */
  function follower(level, where, target) {
    var acc = 0;
    for (var i = where.a; i < where.b; i++) {
      acc += level.counts[i];
      if (target < acc) return level.nexts[i];
    }
    return level.nexts[where.b - 1];  // target rounded up to the total
  }
  /* _Order.count: how often `token` followed the context (0 when it never did). */
  function countOf(level, where, token) {
    for (var i = where.a; i < where.b; i++) if (level.nexts[i] === token) return level.counts[i];
    return 0;
  }
  /* One draw of sampleChain from the levels of the current contexts with the uniform u. */
  NGram.prototype.drawOne = function (where, u) {
    var s = this.smoothing;
    for (var k = where.length - 1; k >= 0; k--) {
      var n = where[k].n, w = n / (n + s);
      if (u < w) return follower(this.levels[k], where[k], u / w * n);  // from this order's counts
      u = (u - w) / (1 - w);  // uniform again, given that it fell past this order
    }
    return Math.min(Math.floor(u * this.V), this.V - 1);  // past every order: the uniform prior
  };
  /** NGramDraft.sample_chain: us.length ids drawn one after another after `ids`, the i-th
      with the uniform us[i], walking down the orders, and each one's probability (equal to
      probs(...)[id] bit for bit): {ids, drawn}. */
  NGram.prototype.sampleChain = function (ids, us) {
    var self = this, V = this.V, s = this.smoothing, codes = this.codes(ids), out = [], drawn = [];
    us.forEach(function (u) {
      var where = codes.map(function (code, k) { return self.level(k, code); });
      var token = self.drawOne(where, u), q = 1 / V;
      where.forEach(function (w, k) { q = (countOf(self.levels[k], w, token) + s * q) / (w.n + s); });
      out.push(token);
      drawn.push(q);
      // the contexts after the new id: each is the one a character shorter, extended
      codes = [0].concat(codes.slice(0, self.order - 1).map(function (c) { return c * V + token; }));
    });
    return { ids: out, drawn: drawn };
  };

  /** A model (contexts -> logits rows) as a draft: its logits after one context. */
  function modelDraft(model, name) {
    return { name: name || "transformer", logits: function (context) {
      return D.andThen(model([context]), function (rows) { return rows[0]; });
    } };
  }

  // --- one round (algorithm.py) -------------------------------------------------------------
  /* Sampler.is_softmax: temperature 1, no truncation, no penalty. */
  function isSoftmax(cfg) {
    return !D.isGreedy(cfg) && !Object.keys(D.penalties(cfg)).length && !Object.keys(D.truncation(cfg)).length;
  }
  /** draft_tokens: g proposals after `seq`, the i-th drawn with us[i] from the draft's q
      shaped by `cfg`: {proposals, qs (their q rows)}, or from an n-gram when cfg leaves q as
      it is, {proposals, drawn (the proposals' probabilities)}. */
  function draftTokens(draft, seq, g, cfg, us) {
    if (draft.sampleChain && isSoftmax(cfg)) {
      var chain = draft.sampleChain(seq, us.slice(0, g));
      return { proposals: chain.ids, drawn: chain.drawn };
    }
    var proposals = [], qs = [];
    return D.repeat(function () {
      if (proposals.length === g) return { proposals: proposals, qs: qs };
      var context = seq.concat(proposals);
      return D.andThen(draft.logits(context), function (logits) {
        var q = D.probs(logits, context, cfg);
        qs.push(q);
        proposals.push(D.drawWith(q, us[proposals.length]));
      });
    });
  }
  /** verify_pass and target_distributions: the target's logits after seq + proposals[:j],
      j = 0 .. g (one pass in the page), and p, each shaped by `cfg`: {rows, p}. */
  function verify(target, seq, proposals, cfg) {
    var contexts = [];
    for (var j = 0; j <= proposals.length; j++) contexts.push(seq.concat(proposals.slice(0, j)));
    return D.andThen(target(contexts), function (rows) {
      return { rows: rows, p: rows.map(function (r, j) { return D.probs(r, contexts[j], cfg); }) };
    });
  }
  /** accept_reject: proposal i is kept while u[i] < p_i(d_i) / q_i(d_i); at the first
      rejection k the next token is drawn with u[g] from the residual max(p_k - q_k, 0) (p_k
      itself if that is all 0), and if all g are kept, from p_g (the bonus): {accepted, token}. */
  function acceptReject(p, drafted, u, draft, seq) {
    var d = drafted.proposals, g = d.length, k = g, i;
    for (i = 0; i < g; i++) {
      var q = drafted.drawn ? drafted.drawn[i] : drafted.qs[i][d[i]];
      if (u[i] >= p[i][d[i]] / q) { k = i; break; }
    }
    var next = p[k];
    if (k < g) {  // the mass where p exceeds q
      var qk = drafted.drawn ? draft.probs(seq.concat(d.slice(0, k))) : drafted.qs[k];
      var residual = p[k].map(function (x, j) { return Math.max(x - qk[j], 0); });
      if (sum(residual) > 0) next = residual;
    }
    return { accepted: k, token: D.drawWith(next, u[g]) };
  }
  /** speculative_round after the text `seq` with g proposals: {proposals, accepted, token,
      rows (the target's logits after seq + proposals[:j])}; `uniforms(n)` gives n uniforms. */
  function speculativeRound(target, draft, seq, g, cfg, uniforms) {
    return D.andThen(draftTokens(draft, seq, g, cfg, uniforms(g)), function (drafted) {
      return D.andThen(verify(target, seq, drafted.proposals, cfg), function (v) {
        var r = acceptReject(v.p, drafted, uniforms(g + 1), draft, seq);
        return { proposals: drafted.proposals, accepted: r.accepted, token: r.token, rows: v.rows };
      });
    });
  }

  // --- the decoder (speculative_decode for one prompt) ----------------------------------------
  /* speculative_decode's checks, in its order and with its messages: {ids (the prompt's),
     slide (whether the text goes on past the window, context_overflow "slide")}. */
  function setup(chars, block, prompt, maxNewTokens, gamma, cfg, overflow) {
    var ids = D.encodePrompt(chars, prompt, Infinity);
    D.checkMaxNewTokens(maxNewTokens);
    D.checkCount("gamma", gamma, 1, null, " (draft tokens per round)");
    var slide = D.checkOverflow(overflow);
    D.checkStopCharacters(chars, cfg);
    if (ids.length > block) {
      throw D.valueError("prompt has " + ids.length + " characters but the context window is " + block +
                         "; keep its last " + block + " characters (prompt[-" + block + ":]) or fewer");
    }
    return { ids: ids, slide: slide };
  }
  /** A uniforms(n) function from the generator of `seed` (decoding.js's, one number each). */
  function seededUniforms(seed) {
    var random = D.generator(seed);
    return function (n) { var out = []; for (var i = 0; i < n; i++) out.push(random()); return out; };
  }
  /* One text's speculative decode (algorithm._Decode): its text so far (_Progress), its
     current window, and SpeculativeStats' counts. */
  function Decode(target, draft, chars, block, prompt, maxNewTokens, gamma, settings, options) {
    var o = options || {};
    this.cfg = D.config(settings);
    var checked = setup(chars, block, prompt, maxNewTokens, gamma, this.cfg, o.overflow);
    this.prompt = checked.ids;
    this.slide = checked.slide;
    this.target = target; this.draft = draft; this.chars = chars; this.block = block;
    this.maxNew = maxNewTokens; this.gamma = gamma; this.onRound = o.onRound;
    this.uniforms = o.uniforms || seededUniforms(this.cfg.seed);
    this.ids = []; this.logprobs = []; this.text = ""; this.reason = null;
    this.seq = null; this.windowEnd = 0;  // the open window's context, and len(ids) when it is full
    this.stats = { draft: draft.name, gamma: gamma, rounds: 0, drafted: 0, proposed: 0, accepted: 0,
                   acceptance: 0, tokensPerRound: [], outcome: [] };
  }
  /* WindowPolicy.open for this text: its next window, or its end ("max_tokens" when it has
     every token, else "context_window"). */
  Decode.prototype.open = function () {
    var length = this.prompt.length + this.ids.length, left = this.maxNew - this.ids.length, start = 0, budget;
    if (this.slide) {
      start = D.windowStart(length, this.block);
      budget = Math.min(left, D.windowEnd(length, this.block) - length);
    } else budget = Math.min(left, this.block - length);
    if (budget <= 0) { this.reason = left <= 0 ? "max_tokens" : "context_window"; return; }
    this.seq = this.prompt.concat(this.ids).slice(start);
    this.windowEnd = this.ids.length + budget;
  };
  /* _emit: a round's new tokens, until one ends the text or fills its window. */
  Decode.prototype.emit = function (r) {
    var emitted = r.proposals.slice(0, r.accepted).concat([r.token]);
    for (var j = 0; j < emitted.length && !this.reason; j++) {
      var t = emitted[j];
      this.seq.push(t);
      this.ids.push(t);
      this.logprobs.push(D.logSoftmax(r.rows[j])[t]);
      this.text += this.chars[t];
      this.reason = D.stopReason(this.cfg, this.text, this.ids.length, this.maxNew) ||
                    (this.windowEnd === this.ids.length ? WINDOW_FULL : null);
    }
  };
  /* SpeculativeStats.record: what one round did. */
  Decode.prototype.record = function (r) {
    var st = this.stats, k = r.accepted, g = r.proposals.length, tested = Math.min(k + 1, g);
    st.rounds++; st.drafted += g; st.proposed += tested; st.accepted += k;
    st.acceptance = st.proposed ? st.accepted / st.proposed : 0;
    st.tokensPerRound.push(k + 1);
    for (var i = 0; i < tested; i++) st.outcome.push(i < k);
  };
  /* One step of the loop: close a full window and open the next, or run a round; the result
     once the text has ended. */
  Decode.prototype.next = function () {
    var self = this;
    if (this.reason === WINDOW_FULL) { this.reason = this.slide ? null : "context_window"; this.seq = null; }
    if (!this.reason && !this.seq) this.open();
    if (this.reason) return this.result();
    var g = Math.min(this.gamma, this.windowEnd - this.ids.length - 1);  // never draft past the window
    return D.andThen(speculativeRound(this.target, this.draft, this.seq, g, this.cfg, this.uniforms), function (r) {
      self.record(r);
      self.emit(r);
      return D.andThen(self.onRound ? self.onRound(Object.assign({ bonus: r.accepted === g, text: self.text,
                                                                stats: self.stats }, r)) : null, function () {});
    });
  };
  Decode.prototype.result = function () {
    return { text: this.text, ids: this.ids.slice(), logprobs: this.logprobs.slice(), stopReason: this.reason,
             stats: this.stats };
  };
  /** speculative_decode for one prompt (a string over `chars`; `block` the context window of
      target and draft): `target` a model, `draft` an NGram or {name, logits(context)}
      (modelDraft), `settings` generate's, options: overflow ("stop" or "slide", as
      context_overflow), uniforms (n -> n uniforms; by default the seed's generator), onRound
      (each round's {proposals, accepted, token, bonus, rows, text, stats}; a Promise it
      returns is waited for). Returns {text, ids, logprobs, stopReason, stats: {draft, gamma,
      rounds (the target's passes), drafted, proposed (tested), accepted, acceptance,
      tokensPerRound, outcome (of each tested proposal)}}, or a Promise of it. */
  function speculativeDecode(target, draft, chars, block, prompt, maxNewTokens, gamma, settings, options) {
    var run = new Decode(target, draft, chars, block, prompt, maxNewTokens, gamma, settings, options);
    return D.repeat(function () { return run.next(); });
  }

  return { WINDOW_FULL: WINDOW_FULL, NGram: NGram, modelDraft: modelDraft, isSoftmax: isSoftmax,
           draftTokens: draftTokens, verify: verify, acceptReject: acceptReject,
           speculativeRound: speculativeRound, seededUniforms: seededUniforms,
           speculativeDecode: speculativeDecode };
})();
if (typeof module !== "undefined" && module.exports) module.exports = SlmSpeculative;
