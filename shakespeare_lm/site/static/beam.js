/* shakespeare_lm.decoding.beam in JavaScript, the one copy the book's pages run: beam search
   as beam_core ranks (summed log-probabilities over the GNMT length penalty, ties to the
   lower candidate index, a beam that ends at a stop sequence keeping its slot with its final
   score, the penalties of the sampler) and exact search by branch and bound as exact_core
   prunes (breadth first, below a fixed lower bound less a tolerance). Both see the model
   only as a function from contexts (arrays of ids, the prompt's and a continuation's) to
   their next-token logits (an array of rows), or a Promise of them: the page's model
   answers later, node's tests at once, and the search is the same. Beam.push also returns
   what the live explorer draws: every step's ranked candidates down to the runners-up past
   the cut (book/_js/slm_beam.js draws them). tests/site/test_beam_js.py runs this file in
   node against Python on the tiny model and the real weights.

   Browser: a classic script, loaded after decoding.js, that defines window.SlmBeam.
   Node: require() it. */
var SlmBeam = (function () {
  "use strict";
  var D = typeof SlmDecoding !== "undefined" ? SlmDecoding : require("./decoding.js");
  // beam.BEAM_SETTINGS: what a search uses of DecodingConfig
  var BEAM_SETTINGS = ["repetition_penalty", "frequency_penalty", "presence_penalty",
                       "no_repeat_ngram_size", "stop"];
  var TOL = 1e-4;               // exact_core's tolerance on the bound
  var MAX_FRONTIER = 50000;     // exact_core's cap on the prefixes kept at one depth

  /** beam.length_penalty: GNMT's ((5 + length) / 6)^alpha (Wu et al. 2016, eq. 14). */
  function lengthPenalty(length, alpha) { return Math.pow((5 + length) / 6, alpha); }
  function sum(xs) { return xs.reduce(function (a, b) { return a + b; }, 0); }
  function given(v) { return v !== null && v !== undefined; }

  // --- the checks of beam.py, with its messages ---------------------------------------------
  function checkWidth(width, vocabSize) {
    D.checkCount("beam_width", width, 1, vocabSize, " (1 is greedy; at most the vocabulary size)");
  }
  function checkAlpha(alpha) {
    D.checkNumber("length_penalty", alpha, null, null,
                  " (the GNMT exponent alpha; 0 switches it off, 0.6-0.7 is typical)");
  }
  /** beam.beam_config: the settings of a search, penalties and stop sequences only. */
  function beamConfig(settings) {
    var cfg = D.config(settings);
    D.refuseAllBut(cfg, BEAM_SETTINGS, "beam search", "it ranks continuations by log-probability and " +
                   "draws nothing, so temperature, truncation rules and seed would change nothing");
    return cfg;
  }

  // --- beam_core, one step at a time ----------------------------------------------------------
  /* The beam between steps (beam._Beam): the live hypotheses {ids, lps (the model's
     log-probabilities), raw (summed scoring log-probabilities)} and the finished ones {ids,
     logprobs, score, reason}. `prompt`: the ids before the continuations (the history the
     penalties count); `options`: settings (penalties and stop, beamConfig), chars (to read
     the stop sequences), endReason (of the live ones at the end, "max_tokens"), runnersUp
     (candidates past the cut that each step reports, 0). */
  function Beam(prompt, vocabSize, maxSteps, width, alpha, options) {
    var o = options || {};
    checkWidth(width, vocabSize);
    D.checkMaxNewTokens(maxSteps);
    checkAlpha(alpha);
    this.cfg = beamConfig(o.settings);
    this.chars = o.chars;
    this.penalised = Object.keys(D.penalties(this.cfg)).length > 0;
    this.prompt = prompt.slice();
    this.V = vocabSize;
    this.maxSteps = maxSteps;
    this.width = width;
    this.alpha = alpha;
    this.endReason = o.endReason || "max_tokens";
    this.runnersUp = o.runnersUp || 0;
    this.t = 0;
    this.live = [{ ids: [], lps: [], raw: 0 }];
    this.finished = [];
    this.done = maxSteps === 0;
  }
  /** The contexts whose next-token logits the next step needs: the prompt and each live
      hypothesis, in beam order (none once the search is done). */
  Beam.prototype.contexts = function () {
    var prompt = this.prompt;
    return this.done ? [] : this.live.map(function (h) { return prompt.concat(h.ids); });
  };
  /* _Beam.scores: (the model's log-probs, the ones the search ranks by: after the penalties,
     which count prompt + hypothesis, renormalised) for one live hypothesis' logits. */
  Beam.prototype.scores = function (logits, h) {
    var model = D.logSoftmax(logits);
    if (!this.penalised) return { model: model, score: model };
    return { model: model, score: D.logSoftmax(D.shape(logits, this.prompt.concat(h.ids), this.cfg)) };
  };
  /* Whether a continuation ends with one of the stop sequences (beam._stop_test). */
  Beam.prototype.ends = function (ids) {
    if (!this.cfg.stop.length) return false;
    var chars = this.chars, text = ids.map(function (i) { return chars[i]; }).join("");
    return this.cfg.stop.some(function (s) { return text.endsWith(s); });
  };
  /* Candidate indices best first: live extensions (row * V + id) then the finished ones,
     by value descending, ties to the lower index (torch.sort(stable=True)). */
  function ranked(values) {
    var order = values.map(function (_, i) { return i; });
    order.sort(function (a, b) { return (values[b] - values[a]) || a - b; });
    return order;
  }
  /** One step (_Beam.advance, _best, _select) from `rows`, the logits of contexts(): every
      extension of every live hypothesis is ranked with the finished ones and the `width`
      best are kept. Returns the step's column: the candidates ranked down to `runnersUp`
      past the cut, each {ids, logprobs, score, kept (in the beam), carried (a finished one
      holding its slot), reason ("stop_sequence" when it ends here, else null)}. */
  Beam.prototype.push = function (rows) {
    if (this.done) throw new Error("the search is done after " + this.t + " steps");
    var self = this, t = this.t + 1, lp = lengthPenalty(t, this.alpha), V = this.V, values = [];
    var scored = this.live.map(function (h, i) { return self.scores(rows[i], h); });
    scored.forEach(function (s, i) {
      for (var v = 0; v < V; v++) values.push((self.live[i].raw + s.score[v]) / lp);
    });
    this.finished.forEach(function (f) { values.push(f.score); });
    var nLive = this.live.length * V, column = [], kept = [], finished = [];
    ranked(values).slice(0, this.width + this.runnersUp).forEach(function (i, rank) {
      if (!isFinite(values[i])) return;
      var inBeam = rank < self.width;
      if (i >= nLive) {                                     // a finished one keeps its slot
        var f = self.finished[i - nLive];
        column.push({ ids: f.ids, logprobs: f.logprobs, score: f.score, kept: inBeam, carried: true, reason: f.reason });
        if (inBeam) finished.push(f);
        return;
      }
      var row = Math.floor(i / V), v = i % V, parent = self.live[row];
      var ids = parent.ids.concat([v]), lps = parent.lps.concat([scored[row].model[v]]);
      var reason = self.ends(ids) ? "stop_sequence" : null;
      column.push({ ids: ids, logprobs: lps, score: values[i], kept: inBeam, carried: false, reason: reason });
      if (!inBeam) return;
      if (reason) finished.push({ ids: ids, logprobs: lps, score: values[i], reason: reason });
      else kept.push({ ids: ids, lps: lps, raw: parent.raw + scored[row].score[v] });
    });
    this.finished = finished;
    this.live = kept;
    this.t = t;
    this.done = !kept.length || t >= this.maxSteps;
    return column;
  };
  /** One step on `model` (contexts -> logits rows, or a Promise of them): its column. */
  Beam.prototype.step = function (model) {
    var self = this;
    return D.andThen(model(this.contexts()), function (rows) { return self.push(rows); });
  };
  /** _Beam.result: every hypothesis in the beam, best first (stably): {ids, logprobs (the
      model's), logprob (their sum), score, reason}; the live ones end with endReason. */
  Beam.prototype.result = function () {
    var lp = lengthPenalty(this.t, this.alpha), end = this.endReason;
    var out = this.finished.map(function (f) {
      return { ids: f.ids, logprobs: f.logprobs, score: f.score, reason: f.reason };
    }).concat(this.live.map(function (h) { return { ids: h.ids, logprobs: h.lps, score: h.raw / lp, reason: end }; }));
    out.forEach(function (h) { h.logprob = sum(h.logprobs); });
    return out.map(function (h, i) { return [h, i]; })
      .sort(function (a, b) { return (b[0].score - a[0].score) || a[1] - b[1]; })
      .map(function (x) { return x[0]; });
  };

  /** beam.beam_search for one prompt (a string over `chars`, the model's vocabulary; `block`
      its context window): every final beam, best first, checked and ended as Python's
      (settings: the penalties and stop). A Promise when the model answers with one. */
  function beamSearch(model, chars, block, prompt, maxNewTokens, width, alpha, settings) {
    var cfg = beamConfig(settings), ids = D.encodePrompt(chars, prompt, block);
    D.checkMaxNewTokens(maxNewTokens);
    checkWidth(width, chars.length);
    checkAlpha(alpha);
    D.checkStopCharacters(chars, cfg);
    var budget = Math.min(maxNewTokens, block - ids.length);  // the window, without sliding
    var beam = new Beam(ids, chars.length, budget, width, alpha,
                        { settings: settings, chars: chars, endReason: budget === maxNewTokens ? "max_tokens" : "context_window" });
    return D.repeat(function () {
      return beam.done ? beam.result() : D.andThen(beam.step(model), function () {});
    });
  }

  // --- exact_core: branch and bound, breadth first ---------------------------------------------
  /* The log-probability of greedy's continuation of `horizon` tokens: exact_core's bound when
     none is given. */
  function greedyBound(model, prompt, horizon) {
    var prefix = [], bound = 0;
    return D.repeat(function () {
      if (prefix.length === horizon) return bound;
      return D.andThen(model([prompt.concat(prefix)]), function (rows) {
        var lp = D.logSoftmax(rows[0]), v = D.argmax(lp);
        bound += lp[v];
        prefix.push(v);
      });
    });
  }
  /* The best extension of the last depth's frontier (the first maximum, in frontier order). */
  function bestLast(st, logp) {
    var best = null;
    logp.forEach(function (row, r) {
      row.forEach(function (l, v) {
        var total = st.scores[r] + l;
        if (best === null || total > best.score) best = { r: r, v: v, score: total };
      });
    });
    return { ids: st.frontier[best.r].concat([best.v]), logprobs: st.lps[best.r].concat([logp[best.r][best.v]]),
             score: best.score, reason: "max_tokens", frontierSizes: st.sizes, prefixes: sum(st.sizes) };
  }
  /* One depth of exact_core: keep every extension scoring at least bound - tol. */
  function deepen(st, logp, bound, o) {
    var frontier = [], scores = [], lps = [];
    logp.forEach(function (row, r) {
      row.forEach(function (l, v) {
        var total = st.scores[r] + l;
        if (!(total >= bound - o.tol)) return;
        frontier.push(st.frontier[r].concat([v]));
        scores.push(total);
        lps.push(st.lps[r].concat([l]));
      });
    });
    if (frontier.length > o.maxFrontier) {
      var e = new Error("exact search at depth " + (st.sizes.length) + " of horizon=" + o.horizon + " would keep " +
                        frontier.length + " prefixes, more than max_frontier=" + o.maxFrontier + ": use a shorter " +
                        "horizon, a better lower_bound (a wider beam's score) or a larger max_frontier");
      e.name = "RuntimeError";
      throw e;
    }
    st.frontier = frontier; st.scores = scores; st.lps = lps;
  }
  /** exact_core: the most probable continuation of exactly `horizon` tokens after `prompt`
      (ids). Prefixes scoring below `lowerBound` (the log-probability of a known continuation
      of that length; null: greedy's) less `options.tol` are pruned, since log-probabilities
      are <= 0. Returns {ids, logprobs, score (their sum), reason, frontierSizes (the prefixes
      scored at each depth), prefixes (their sum)}; a depth that would keep more than
      options.maxFrontier prefixes throws. A Promise when the model answers with one. */
  function exactCore(model, prompt, horizon, lowerBound, options) {
    D.checkCount("horizon", horizon, 1);
    var o = Object.assign({ tol: TOL, maxFrontier: MAX_FRONTIER, horizon: horizon }, options || {});
    return D.andThen(given(lowerBound) ? lowerBound : greedyBound(model, prompt, horizon), function (bound) {
      var st = { frontier: [[]], scores: [0], lps: [[]], sizes: [] };
      return D.repeat(function () {
        st.sizes.push(st.frontier.length);
        var contexts = st.frontier.map(function (p) { return prompt.concat(p); });
        return D.andThen(model(contexts), function (rows) {
          var logp = rows.map(function (row) { return D.logSoftmax(row); });
          if (st.sizes.length === horizon) return bestLast(st, logp);
          deepen(st, logp, bound, o);
        });
      });
    });
  }
  /** beam.exact_search for one prompt (a string): the bound is options.lowerBound, or the
      log-probability of the options.beamWidth (5) beam's best continuation; {best, the
      frontier sizes, prefixes} as exactCore gives them. */
  function exactSearch(model, chars, block, prompt, horizon, options) {
    var o = options || {};
    if (typeof prompt !== "string") {
      throw new TypeError("prompt must be a str (exact search runs one prompt), got " + D.repr(prompt).slice(0, 80));
    }
    var ids = D.encodePrompt(chars, prompt, block);
    D.checkCount("horizon", horizon, 1, block - ids.length,
                 " (the context window " + block + " less the prompt's " + ids.length + " characters)");
    var bound = given(o.lowerBound) ? o.lowerBound : D.andThen(
      beamSearch(model, chars, block, prompt, horizon, given(o.beamWidth) ? o.beamWidth : 5, 0),
      function (beams) { return beams[0].logprob; });
    return D.andThen(bound, function (b) { return exactCore(model, ids, horizon, b, o); });
  }

  return { BEAM_SETTINGS: BEAM_SETTINGS, TOL: TOL, lengthPenalty: lengthPenalty, beamConfig: beamConfig,
           Beam: Beam, beamSearch: beamSearch, exactCore: exactCore, exactSearch: exactSearch };
})();
if (typeof module !== "undefined" && module.exports) module.exports = SlmBeam;
