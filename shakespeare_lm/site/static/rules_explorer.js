/* The decoding rules of shakespeare_lm.rules, in JavaScript, for the live model on the book's
   site (book/_js/slm_runtime.js samples with them). Same semantics, same order, same float64
   thresholds and TOL; tests/site/test_rules_js.py runs this file in node and checks it against the
   Python on the same logits. (The kernel-free explorer computes the same rules in Vega-Lite,
   shakespeare_lm/rules_vega.py.)

   Browser: a classic script, it defines window.RulesExplorer. Node: require() it. */
var RulesExplorer = (function () {
  "use strict";
  var TOL = 1e-12;  // rules.TOL: within TOL of a threshold counts as reaching it

  function check(name, value, ok, valid) {
    if (!ok) throw new Error(name + "=" + value + " is invalid: " + name + " must be " + valid);
  }
  function isNum(x) { return typeof x === "number" && isFinite(x); }

  function logSoftmax(logits) {
    var max = -Infinity, i, sum = 0;
    for (i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
    for (i = 0; i < logits.length; i++) sum += Math.exp(logits[i] - max);
    var lse = max + Math.log(sum);
    return logits.map(function (x) { return x - lse; });
  }
  function probs(logits) { return logSoftmax(logits).map(Math.exp); }
  function entropyNats(logp) {
    var h = 0;
    logp.forEach(function (l) { var p = Math.exp(l); if (p > 0) h -= p * l; });
    return h;
  }
  function entropyBits(logits) { return entropyNats(logSoftmax(logits)) / Math.LN2; }

  // token ids ordered by key, ascending or descending, ties to the lower id
  function order(keys, descending) {
    var ids = keys.map(function (_, i) { return i; });
    ids.sort(function (a, b) {
      var d = descending ? keys[b] - keys[a] : keys[a] - keys[b];
      if (keys[a] === keys[b] || isNaN(d)) d = 0;
      return d || a - b;
    });
    return ids;
  }
  function mask(logits, keep) {
    return logits.map(function (x, i) { return keep[i] ? x : -Infinity; });
  }
  // keep the first tokens of ids while the mass of those before them is below p (the first always)
  function keepPrefixByMass(logits, ids, p, mass) {
    var keep = logits.map(function () { return false; }), cumsum = 0;
    ids.forEach(function (id, rank) {
      cumsum += p[id];
      var before = cumsum - p[id];  // as rules.py computes it: cumsum - p
      if (rank === 0 || before < mass - TOL) keep[id] = true;
    });
    return mask(logits, keep);
  }
  function keepTop(logits, keep) {
    var max = Math.max.apply(null, logits);
    return mask(logits, logits.map(function (x, i) { return keep[i] || x === max; }));
  }

  function temperature(logits, t) {
    check("temperature", t, isNum(t) && t > 0, "a number > 0");
    return logits.map(function (x) { return x / t; });
  }
  function topK(logits, k) {
    check("top_k", k, Number.isInteger(k) && k >= 1, "an integer >= 1");
    if (k >= logits.length) return logits.slice();
    var keep = logits.map(function () { return false; });
    order(logits, true).slice(0, k).forEach(function (id) { keep[id] = true; });
    return mask(logits, keep);
  }
  function topP(logits, p) {
    check("top_p", p, isNum(p) && p > 0 && p <= 1, "in (0, 1]");
    if (p === 1) return logits.slice();
    return keepPrefixByMass(logits, order(logits, true), probs(logits), p);
  }
  function minP(logits, ratio) {
    check("min_p", ratio, isNum(ratio) && ratio >= 0 && ratio <= 1, "in [0, 1]");
    if (ratio === 0) return logits.slice();
    var logp = logSoftmax(logits), threshold = Math.max.apply(null, logp) + Math.log(ratio);
    return keepTop(logits, logp.map(function (l) { return l >= threshold - TOL; }));
  }
  function typical(logits, mass) {
    check("typical_p", mass, isNum(mass) && mass > 0 && mass <= 1, "in (0, 1]");
    if (mass === 1) return logits.slice();
    var logp = logSoftmax(logits), h = entropyNats(logp);
    var distance = logp.map(function (l) { return isFinite(l) ? Math.abs(-l - h) : Infinity; });
    return keepPrefixByMass(logits, order(distance, false), logp.map(Math.exp), mass);
  }
  function epsilon(logits, eps) {
    check("epsilon", eps, isNum(eps) && eps >= 0 && eps < 1, "in [0, 1)");
    if (eps === 0) return logits.slice();
    var bound = Math.log(eps) - TOL;
    return keepTop(logits, logSoftmax(logits).map(function (l) { return l >= bound; }));
  }
  function etaThreshold(logits, eps) {
    check("eta", eps, isNum(eps) && eps >= 0 && eps < 1, "in [0, 1)");
    return Math.min(eps, Math.sqrt(eps) * Math.exp(-entropyNats(logSoftmax(logits))));
  }
  function eta(logits, eps) {
    var threshold = etaThreshold(logits, eps);
    if (eps === 0) return logits.slice();
    var bound = Math.log(threshold) - TOL;
    return keepTop(logits, logSoftmax(logits).map(function (l) { return l >= bound; }));
  }

  var ORDER = ["temperature", "top_k", "top_p", "min_p", "typical_p", "epsilon", "eta"];
  var RULES = { temperature: temperature, top_k: topK, top_p: topP, min_p: minP,
                typical_p: typical, epsilon: epsilon, eta: eta };

  // rules.compose without the penalties (the explorer has no history): null skips a rule,
  // temperature 0 skips temperature (greedy is decided by the caller)
  function compose(logits, settings) {
    var out = logits;
    ORDER.forEach(function (name) {
      var v = settings[name];
      if (v === null || v === undefined || (name === "temperature" && v === 0)) return;
      out = RULES[name](out, v);
    });
    return out;
  }
  // the distribution a token is drawn from: softmax of the composed logits, or for
  // temperature 0 (greedy) all mass on the argmax (the lowest id among ties)
  function surviving(logits, settings) {
    if (settings.temperature === 0) {
      var top = order(logits, true)[0];
      return logits.map(function (_, i) { return i === top ? 1 : 0; });
    }
    var out = compose(logits, settings);
    if (!out.some(isFinite)) throw new Error("no token survived");
    return probs(out);
  }

  return { TOL: TOL, ORDER: ORDER, logSoftmax: logSoftmax, entropyBits: entropyBits,
           temperature: temperature, top_k: topK, top_p: topP, min_p: minP, typical_p: typical,
           epsilon: epsilon, eta: eta, eta_threshold: etaThreshold, compose: compose,
           surviving: surviving };
})();
if (typeof module !== "undefined" && module.exports) module.exports = RulesExplorer;
