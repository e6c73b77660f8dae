/* shakespeare_lm.decoding in JavaScript, the one copy the book's pages run: the rules and
   the penalties of rules.py, DecodingConfig's checks (sampler.py, checks.py) with Python's
   messages word for word, the sampler, the stop sequences, the context window of
   context_window.py, the steps of generate.py's loop (Generation) and the loop itself
   (run), the one token loop of every page: it asks the model through a function from
   contexts to logits, which may answer at once (node) or with a Promise (the page). The
   same semantics and order, the same float64 thresholds and TOL, ties to the lower id;
   beam.js and speculative.js build on it. book/_js/slm_runtime.js generates
   with it and the live explorers draw what it computes; chapter 3's kernel-free explorer
   needs none of it (Python computes its distributions, shakespeare_lm/site/explorer.py).
   tests/site/test_rules_js.py runs this file in node against the Python on the same inputs.

   Browser: a classic script that defines window.SlmDecoding (after rules.js). Node: require() it. */
var SlmDecoding = (function () {
  "use strict";
  var TOL = 1e-12;  // rules.TOL: within TOL of a threshold counts as reaching it
  // The lists below come from the registry of the rules (shakespeare_lm/decoding/registry.py)
  // through rules.js, which make book writes (shakespeare_lm/site/browser_rules.py) and a page
  // loads before this file; under node, set globalThis.SlmRules = require(".../rules.js") first.
  if (typeof SlmRules === "undefined") {
    throw new Error("decoding.js needs rules.js (SlmRules) loaded before it: build the site with make book");
  }
  var FIELDS = SlmRules.fields, DEFAULTS = SlmRules.defaults;  // DecodingConfig's fields, in order
  var PYTHON_ONLY = SlmRules.python_only;  // its settings the browser's sampler lacks: refused
  var XTC_THRESHOLD = SlmRules.fallbacks.xtc_threshold;  // XTC's threshold when left out
  var ORDER = SlmRules.order;  // rules.ORDER: the penalties, then temperature and the truncations
  var PARAMS = SlmRules.params;  // a rule's other settings (XTC's threshold), no steps of their own

  // --- messages: values written as Python's repr writes them ---------------------------
  function reprNumber(x) {
    if (Number.isNaN(x)) return "nan";
    if (!isFinite(x)) return x > 0 ? "inf" : "-inf";
    if (Number.isInteger(x) && Math.abs(x) < 1e16) return String(x);  // JS cannot tell 2 from 2.0
    var m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(x.toExponential());  // shortest digits
    var sign = m[1], digits = m[2] + (m[3] || ""), exp = +m[4];
    if (exp < -4 || exp >= 16) {
      var mantissa = digits[0] + (digits.length > 1 ? "." + digits.slice(1) : "");
      return sign + mantissa + "e" + (exp < 0 ? "-" : "+") + (Math.abs(exp) < 10 ? "0" : "") + Math.abs(exp);
    }
    if (exp < 0) return sign + "0." + "0".repeat(-exp - 1) + digits;
    return sign + digits.slice(0, exp + 1) + "." + (digits.slice(exp + 1) || "0");
  }
  function reprString(s) {
    var quote = s.indexOf("'") >= 0 && s.indexOf('"') < 0 ? '"' : "'";
    var escapes = { "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t" };
    return quote + Array.from(s).map(function (ch) {
      var c = ch.codePointAt(0);
      if (escapes[ch]) return escapes[ch];
      if (ch === quote) return "\\" + ch;
      if (c < 0x20 || (c >= 0x7f && c < 0xa0)) return "\\x" + (c < 16 ? "0" : "") + c.toString(16);
      return ch;
    }).join("") + quote;
  }
  /** How Python's repr() writes `v` (a number, str, bool, null as None, array as list). */
  function repr(v) {
    if (v === null || v === undefined) return "None";
    if (typeof v === "boolean") return v ? "True" : "False";
    if (typeof v === "number") return reprNumber(v);
    if (typeof v === "string") return reprString(v);
    if (Array.isArray(v)) return "[" + v.map(repr).join(", ") + "]";
    if (typeof v === "object") {
      return "{" + Object.keys(v).map(function (k) { return reprString(k) + ": " + repr(v[k]); }).join(", ") + "}";
    }
    return String(v);
  }
  function valueError(message) {
    var e = new Error(message);
    e.name = "ValueError";
    return e;
  }
  function check(name, value, ok, valid) {
    if (!ok) throw valueError(name + "=" + repr(value) + " is invalid: " + name + " must be " + valid);
  }
  function isNum(x) { return typeof x === "number" && isFinite(x); }

  // --- distributions ---------------------------------------------------------------------
  function logSoftmax(logits) {
    var max = -Infinity, i, sum = 0;
    for (i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
    for (i = 0; i < logits.length; i++) sum += Math.exp(logits[i] - max);
    var lse = max + Math.log(sum);
    return Array.from(logits, function (x) { return x - lse; });
  }
  function softmax(logits) { return logSoftmax(logits).map(Math.exp); }
  function entropyNats(logp) {
    var h = 0;
    logp.forEach(function (l) { var p = Math.exp(l); if (p > 0) h -= p * l; });
    return h;
  }
  /** rules.entropy_bits: the entropy in bits of softmax(logits); -inf entries count as 0. */
  function entropyBits(logits) { return entropyNats(logSoftmax(logits)) / Math.LN2; }
  /** rules.greedy: the most probable id, the lowest among ties. */
  function argmax(logits) {
    var best = 0;
    for (var i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
    return best;
  }
  /** Token ids ordered by key, ascending or descending, ties to the lower id. */
  function order(keys, descending) {
    var ids = Array.from(keys, function (_, i) { return i; });
    ids.sort(function (a, b) {
      var d = descending ? keys[b] - keys[a] : keys[a] - keys[b];
      if (keys[a] === keys[b] || isNaN(d)) d = 0;
      return d || a - b;
    });
    return ids;
  }
  function mask(logits, keep) {
    return Array.from(logits, function (x, i) { return keep[i] ? x : -Infinity; });
  }
  // keep the first tokens of ids while the mass of those before them is below `mass` (the first always)
  function keepPrefixByMass(logits, ids, p, mass) {
    var keep = Array.from(logits, function () { return false; }), cumsum = 0;
    ids.forEach(function (id, rank) {
      cumsum += p[id];
      var before = cumsum - p[id];  // as rules.py computes it: cumsum - p
      if (rank === 0 || before < mass - TOL) keep[id] = true;
    });
    return mask(logits, keep);
  }
  function keepTop(logits, keep) {
    var max = Math.max.apply(null, logits);
    return mask(logits, Array.from(logits, function (x, i) { return keep[i] || x === max; }));
  }

  // --- the rules (rules.py): logits (V) -> logits (V), filtered tokens -inf ---------------
  function temperature(logits, t) {
    check("temperature", t, isNum(t) && t > 0,
          "a number > 0 (for greedy decoding use argmax: temperature=0 in generate)");
    return Array.from(logits, function (x) { return x / t; });
  }
  function topK(logits, k) {
    check("top_k", k, Number.isInteger(k) && k >= 1, "an integer >= 1");
    if (k >= logits.length) return Array.from(logits);
    var keep = Array.from(logits, function () { return false; });
    order(logits, true).slice(0, k).forEach(function (id) { keep[id] = true; });
    return mask(logits, keep);
  }
  function topP(logits, p) {
    check("top_p", p, isNum(p) && p > 0 && p <= 1, "in (0, 1]");
    if (p === 1) return Array.from(logits);
    return keepPrefixByMass(logits, order(logits, true), softmax(logits), p);
  }
  function minP(logits, ratio) {
    check("min_p", ratio, isNum(ratio) && ratio >= 0 && ratio <= 1, "in [0, 1]");
    if (ratio === 0) return Array.from(logits);
    var logp = logSoftmax(logits), threshold = Math.max.apply(null, logp) + Math.log(ratio);
    return keepTop(logits, logp.map(function (l) { return l >= threshold - TOL; }));
  }
  function typical(logits, mass) {
    check("typical_p", mass, isNum(mass) && mass > 0 && mass <= 1, "in (0, 1]");
    if (mass === 1) return Array.from(logits);
    var logp = logSoftmax(logits), h = entropyNats(logp);
    var distance = logp.map(function (l) { return isFinite(l) ? Math.abs(-l - h) : Infinity; });
    return keepPrefixByMass(logits, order(distance, false), logp.map(Math.exp), mass);
  }
  function epsilon(logits, eps) {
    check("epsilon", eps, isNum(eps) && eps >= 0 && eps < 1, "in [0, 1)");
    if (eps === 0) return Array.from(logits);
    var bound = Math.log(eps) - TOL;
    return keepTop(logits, logSoftmax(logits).map(function (l) { return l >= bound; }));
  }
  function etaThreshold(logits, eps) {
    check("eta", eps, isNum(eps) && eps >= 0 && eps < 1, "in [0, 1)");
    return Math.min(eps, Math.sqrt(eps) * Math.exp(-entropyNats(logSoftmax(logits))));
  }
  /** rules.top_n_sigma: keep logits >= max - n * sigma, sigma over the finite logits. */
  function topNSigma(logits, n) {
    check("top_n_sigma", n, isNum(n) && n > 0, "a number > 0 (standard deviations)");
    var finite = Array.from(logits).filter(function (x) { return isFinite(x); });
    var mean = finite.reduce(function (a, b) { return a + b; }, 0) / Math.max(finite.length, 1);
    var sd = Math.sqrt(finite.reduce(function (a, x) { return a + (x - mean) * (x - mean); }, 0)
                       / Math.max(finite.length, 1));
    var top = Math.max.apply(null, logits), bound = top - n * sd - TOL;
    return keepTop(logits, Array.from(logits, function (x) { return x >= bound; }));
  }
  /** rules.xtc: when the draw u <= probability and two or more tokens reach the threshold,
      remove all of those but the least probable of them (ties: lower id first). */
  function xtc(logits, threshold, probability, u) {
    check("xtc_threshold", threshold, isNum(threshold) && threshold >= 0 && threshold <= 1, "in [0, 1]");
    check("xtc_probability", probability, isNum(probability) && probability >= 0 && probability <= 1, "in [0, 1]");
    if (probability === 0 || threshold > 0.5 || !(u <= probability)) return Array.from(logits);
    var p = softmax(logits), ids = order(logits, true);
    var above = ids.filter(function (id) { return p[id] >= threshold - TOL; }).length;
    if (above < 2) return Array.from(logits);
    var drop = {};
    ids.slice(0, above - 1).forEach(function (id) { drop[id] = true; });
    return Array.from(logits, function (x, i) { return drop[i] ? -Infinity : x; });
  }
  function eta(logits, eps) {
    var threshold = etaThreshold(logits, eps);
    if (eps === 0) return Array.from(logits);
    var bound = Math.log(threshold) - TOL;
    return keepTop(logits, logSoftmax(logits).map(function (l) { return l >= bound; }));
  }

  // --- the penalties (rules.py): they see the history, the ids so far ---------------------
  /** How often each id occurs in `history` (ids < 0, padding, are ignored): an array (V). */
  function counts(history, vocabSize) {
    var c = new Array(vocabSize).fill(0);
    for (var i = 0; i < history.length; i++) if (history[i] >= 0) c[history[i]] += 1;
    return c;
  }
  /** CTRL's penalty (Keskar et al. 2019): a seen id's positive logit divided by `penalty`,
      a negative one multiplied. */
  function repetitionPenalty(logits, history, penalty) {
    check("repetition_penalty", penalty, isNum(penalty) && penalty > 0, "a number > 0");
    var c = counts(history, logits.length);
    return Array.from(logits, function (x, i) { return c[i] > 0 ? (x > 0 ? x / penalty : x * penalty) : x; });
  }
  /** OpenAI's frequency penalty: alpha times each id's count in `history` subtracted. */
  function frequencyPenalty(logits, history, alpha) {
    check("frequency_penalty", alpha, isNum(alpha), "a finite number");
    var c = counts(history, logits.length);
    return Array.from(logits, function (x, i) { return x - alpha * c[i]; });
  }
  /** OpenAI's presence penalty: alpha subtracted once from every id seen in `history`. */
  function presencePenalty(logits, history, alpha) {
    check("presence_penalty", alpha, isNum(alpha), "a finite number");
    var c = counts(history, logits.length);
    return Array.from(logits, function (x, i) { return c[i] > 0 ? x - alpha : x; });
  }

  var PENALTIES = { repetition_penalty: repetitionPenalty, frequency_penalty: frequencyPenalty,
                    presence_penalty: presencePenalty };
  var TRUNCATIONS = { temperature: temperature, top_n_sigma: topNSigma, top_k: topK, top_p: topP,
                      min_p: minP, typical_p: typical, epsilon: epsilon, eta: eta };

  function given(v) { return v !== null && v !== undefined; }
  function checkNames(settings) {
    var unknown = Object.keys(settings).filter(function (k) {
      return ORDER.indexOf(k) < 0 && PARAMS.indexOf(k) < 0;
    }).sort();
    if (unknown.length) throw new TypeError("unknown decoding rule(s) " + repr(unknown) + "; known: " + repr(ORDER));
  }
  /** rules.validate: every setting checked once, with the rule's own message. */
  function validate(settings) {
    checkNames(settings);
    Object.keys(settings).forEach(function (name) {
      var value = settings[name];
      if (!given(value)) return;
      if (PENALTIES[name]) PENALTIES[name]([0, 0], [0], value);
      else if (name === "xtc_threshold") {
        if (!given(settings.xtc_probability)) {
          throw valueError("xtc_threshold=" + repr(value) + " is set but xtc_probability is not: " +
                           "set xtc_probability to turn the rule on");
        }
      } else if (name === "xtc_probability") {
        xtc([0, 0], given(settings.xtc_threshold) ? settings.xtc_threshold : XTC_THRESHOLD, value, 1);
      } else if (name === "temperature") {
        check("temperature", value, isNum(value) && value >= 0, "a number >= 0 (0 means greedy)");
      } else TRUNCATIONS[name]([0, 0], value);
    });
  }
  /** rules.compose: every given rule applied to logits (V) in ORDER; null (or temperature 0,
      greedy) skips a rule; `history` (the ids so far) is what the penalties count. */
  function compose(logits, history, settings, u) {
    checkNames(settings);
    var out = Array.from(logits);
    ORDER.forEach(function (name) {
      var value = settings[name];
      if (!given(value) || (name === "temperature" && value === 0)) return;
      if (PENALTIES[name]) {
        if (!given(history)) throw valueError(name + " needs the history of token ids (history=None given)");
        if (history.length > 0) out = PENALTIES[name](out, history, value);
      } else if (name === "xtc_probability") {
        if (!given(u)) throw valueError("xtc_probability needs one uniform draw per row (xtc_u=None given)");
        out = xtc(out, given(settings.xtc_threshold) ? settings.xtc_threshold : XTC_THRESHOLD, value, u);
      } else out = TRUNCATIONS[name](out, value);
    });
    return out;
  }

  // --- DecodingConfig (sampler.py) -------------------------------------------------------
  /** The stop sequences of `stop` (a string, an array of strings, or null): an array. */
  function stops(stop) {
    var list = !given(stop) ? [] : typeof stop === "string" ? [stop] : Array.isArray(stop) ? stop.slice() : null;
    if (list === null || list.some(function (s) { return typeof s !== "string" || !s; })) {
      throw valueError("stop=" + repr(stop) + " is invalid: every stop sequence must be a non-empty str");
    }
    return list;
  }
  /** DecodingConfig.from_settings: `settings` (an object of its fields; undefined ones take
      their defaults) checked as Python checks them, with the same messages; a frozen config. */
  function config(settings) {
    settings = settings === undefined || settings === null ? {} : settings;
    if (typeof settings !== "object" || Array.isArray(settings)) {
      throw new TypeError("settings must be an object of decoding settings, got " + repr(settings));
    }
    var names = Object.keys(settings).filter(function (k) { return settings[k] !== undefined; });
    var unknown = names.filter(function (k) { return FIELDS.indexOf(k) < 0; }).sort();
    if (unknown.length) throw new TypeError("unknown decoding setting(s) " + repr(unknown) + "; known: " + repr(FIELDS));
    var cfg = {};
    FIELDS.forEach(function (f) {
      cfg[f] = settings[f] !== undefined ? settings[f] : DEFAULTS[f] !== undefined ? DEFAULTS[f] : null;
    });
    PYTHON_ONLY.forEach(function (f) {
      var d = DEFAULTS[f] !== undefined ? DEFAULTS[f] : null;
      if (cfg[f] !== d) {
        throw valueError(f + "=" + repr(cfg[f]) + " is not available in the browser's sampler: "
                         + "it runs in Python (shakespeare_lm.generate)");
      }
    });
    var rules = {};
    ORDER.concat(PARAMS).forEach(function (name) { rules[name] = cfg[name]; });
    validate(rules);
    if (given(cfg.seed) && !Number.isInteger(cfg.seed)) {
      throw valueError("seed=" + repr(cfg.seed) + " is invalid: seed must be an integer or None");
    }
    cfg.stop = stops(cfg.stop);
    return Object.freeze(cfg);
  }
  /** DecodingConfig.refuse_all_but: a ValueError naming every setting of `cfg` outside
      `used` that differs from its default, which `decoder` would ignore, and `why`. */
  function refuseAllBut(cfg, used, decoder, why) {
    var unused = FIELDS.filter(function (f) {
      var d = DEFAULTS[f] !== undefined ? DEFAULTS[f] : null;
      return used.indexOf(f) < 0 && repr(cfg[f]) !== repr(d);
    }).map(function (f) { return f + "=" + repr(cfg[f]); });
    if (unused.length) {
      throw valueError(decoder + " does not use " + unused.join(", ") + ": " + why + "; it takes " +
                       (used.length ? used.join(", ") : "no decoding settings"));
    }
  }
  function isGreedy(cfg) { return cfg.temperature === 0; }
  /** The penalties that are on, by name. */
  function penalties(cfg) {
    var out = {};
    ORDER.slice(0, 3).forEach(function (n) { if (given(cfg[n])) out[n] = cfg[n]; });
    return out;
  }
  /** Temperature and the truncation rules that are on; none when greedy. */
  function truncation(cfg) {
    var out = {};
    if (isGreedy(cfg)) return out;
    ORDER.slice(3).forEach(function (n) { if (given(cfg[n])) out[n] = cfg[n]; });
    if (given(out.xtc_probability) && given(cfg.xtc_threshold)) out.xtc_threshold = cfg.xtc_threshold;
    if (out.temperature === 1) delete out.temperature;  // dividing by 1 changes nothing
    return out;
  }

  // --- the sampler (Sampler of sampler.py, without constraints) ----------------------------
  /** Sampler.shape: the penalties (they count `history`), then unless greedy temperature and
      truncation: the logits (V) a token is chosen from. */
  function shape(logits, history, cfg, random) {
    var p = penalties(cfg), t = truncation(cfg);
    var out = Object.keys(p).length ? compose(logits, history, p) : Array.from(logits);
    if (!Object.keys(t).length) return out;
    if (!given(t.xtc_probability)) return compose(out, null, t);
    if (random) return compose(out, null, t, random());  // XTC's draw, then the token's
    // no draw asked for: the exact distribution over both outcomes, as Sampler.shape gives it
    var pi = t.xtc_probability, cut = softmax(compose(out, null, t, 0)), whole = softmax(compose(out, null, t, 2));
    return cut.map(function (c, i) { return Math.log(pi * c + (1 - pi) * whole[i]); });
  }
  /** Sampler.distribution: shaped logits -> the probabilities drawn from (one-hot when greedy). */
  function distribution(shaped, cfg) {
    if (!isGreedy(cfg)) return softmax(shaped);
    var top = argmax(shaped);
    return Array.from(shaped, function (_, i) { return i === top ? 1 : 0; });
  }
  /** Sampler.probs: raw logits -> the distribution a token is drawn from. */
  function probs(logits, history, cfg) { return distribution(shape(logits, history, cfg), cfg); }
  /** mulberry32: a seeded generator of uniform numbers in [0, 1); a random seed for null. */
  function generator(seed) {
    var a = (given(seed) ? seed : Math.floor(Math.random() * 4294967296)) >>> 0;
    return function () {
      a = (a + 0x6D2B79F5) | 0;
      var t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  /** drafts.draw: the index drawn from unnormalised `weights` (V) with the uniform `u` in
      [0, 1), by the inverse CDF in id order: the first index whose cumulative weight exceeds
      u times the total (a weight of 0 is never drawn; past the total, the last one > 0). */
  function drawWith(weights, u) {
    var acc = new Float64Array(weights.length), total = 0, i;
    for (i = 0; i < weights.length; i++) acc[i] = total += weights[i];
    var x = u * total;
    for (i = 0; i < acc.length; i++) if (acc[i] > x) return i;
    for (i = weights.length - 1; i > 0 && !(weights[i] > 0); i--);
    return i;
  }
  /** An id drawn from probabilities `p` with the next number of `random` (drawWith). */
  function draw(p, random) { return drawWith(p, random()); }
  /** Sampler.choose: the argmax when greedy (no random number used), else a draw. */
  function choose(shaped, cfg, random) {
    return isGreedy(cfg) ? argmax(shaped) : draw(softmax(shaped), random);
  }

  // --- the checks of generate (checks.py) and the tokenizer's message ----------------------
  /** check_count: an integer (not a bool) in [low, high] (high null: no upper bound), else
      the message that names it. */
  function checkCount(name, value, low, high, hint) {
    var bounded = given(high);
    if (!Number.isInteger(value) || value < low || (bounded && value > high)) {
      var where = bounded ? "in [" + low + ", " + high + "]" : ">= " + low;
      throw valueError(name + "=" + repr(value) + " is invalid: " + name + " must be an integer " + where + (hint || ""));
    }
  }
  /** check_number: a finite number in [low, high] (null: unbounded), else the message. */
  function checkNumber(name, value, low, high, hint) {
    var lo = given(low), hi = given(high);
    if (!isNum(value) || (lo && value < low) || (hi && value > high)) {
      var where = lo || hi ? " in [" + repr(given(low) ? low : null) + ", " + repr(given(high) ? high : null) + "]" : "";
      throw valueError(name + "=" + repr(value) + " is invalid: " + name + " must be " +
                       (where ? "a number" : "a finite number") + where + (hint || ""));
    }
  }
  function checkMaxNewTokens(n) { checkCount("max_new_tokens", n, 0); }
  /** CharTokenizer.encode: the ids of `text` over the characters `chars`. */
  function encode(chars, text) {
    if (typeof text !== "string") throw new TypeError("encode expects a str, got " + repr(text));
    var ids = [], pos = 0;
    for (var ch of text) {
      var id = chars.indexOf(ch);
      if (id < 0) {
        throw valueError("character " + repr(ch) + " at position " + pos + " is not in the vocabulary; " +
                         "the model knows only these " + Array.from(chars).length + " characters: " + repr(chars));
      }
      ids.push(id);
      pos++;
    }
    return ids;
  }
  /** encode_prompts for one prompt: its ids; empty, unknown characters or longer than the
      context window `block` are errors. */
  function encodePrompt(chars, prompt, block) {
    if (typeof prompt !== "string") throw new TypeError("prompt must be a str, got " + repr(prompt).slice(0, 80));
    if (!prompt) {
      throw valueError("empty prompt: a character model needs at least one character to condition on, " +
                       "e.g. a speaker line such as 'KATHARINA:\\n'");
    }
    var ids = encode(chars, prompt);
    if (ids.length > block) {
      throw valueError("prompt 0 has " + ids.length + " characters but the model's context window is " + block +
                       "; keep its last " + block + " characters (prompt[-" + block + ":]) or fewer");
    }
    return ids;
  }

  // --- the context window (context_window.py) -----------------------------------------------
  /** Where the context of the character at position i begins. */
  function windowStart(i, block) {
    var h = Math.floor(block / 2);
    return Math.max(0, (Math.floor(i / h) - 1) * h);
  }
  /** Where the window that holds position i ends (the next restart). */
  function windowEnd(i, block) {
    var h = Math.floor(block / 2);
    return Math.max(2, Math.floor(i / h) + 1) * h;
  }

  /** DecodingConfig.check_stop_characters: a stop the model cannot write could never match. */
  function checkStopCharacters(chars, cfg) { cfg.stop.forEach(function (s) { encode(chars, s); }); }
  /** check_context_overflow: whether `overflow` ("stop", the default, or "slide") slides. */
  function checkOverflow(overflow) {
    overflow = given(overflow) ? overflow : "stop";
    if (overflow !== "stop" && overflow !== "slide") {
      throw valueError("context_overflow=" + repr(overflow) + " is invalid: it must be " +
                       "'stop' (end with stop_reason 'context_window') or 'slide'");
    }
    return overflow === "slide";
  }

  // --- loops that run as well on a model that answers at once as on one that answers later --
  function isPromise(x) { return !!x && typeof x.then === "function"; }
  /** fn(x), once x has resolved if it is a Promise: a result, or a Promise of it. (Not named
      `then`: an object with a then method is a thenable, and resolving a Promise with this
      module would call it.) */
  function andThen(x, fn) { return isPromise(x) ? x.then(fn) : fn(x); }
  /** Call `step()` until it returns something other than undefined (or a Promise of it),
      and return that (or a Promise of it). A step that answers at once loops here, one
      that answers later chains Promises, so neither grows the stack. */
  function repeat(step) {
    for (;;) {
      var r = step();
      if (isPromise(r)) return r.then(function (v) { return v === undefined ? repeat(step) : v; });
      if (r !== undefined) return r;
    }
  }

  // --- generate.py's loop, for one prompt, without the model ----------------------------------
  /* A generation in progress: `context()` is what the model must see next (null when done);
     `push(logits)` chooses the next id from the model's logits after it; run() is the loop.
     The model's vocabulary `chars`, its context window `block`, then what generate takes;
     `overflow` is its context_overflow, "stop" (end with "context_window") or "slide". */
  function Generation(chars, block, prompt, maxNewTokens, settings, overflow) {
    this.chars = chars;
    this.cfg = config(settings);
    this.promptIds = encodePrompt(chars, prompt, block);
    checkMaxNewTokens(maxNewTokens);
    checkStopCharacters(chars, this.cfg);
    this.slide = checkOverflow(overflow);
    this.block = block;
    this.maxNewTokens = maxNewTokens;
    this.random = generator(this.cfg.seed);  // greedy draws none
    this.ids = [];
    this.logprobs = [];
    this.text = "";
    this.stopReason = maxNewTokens > 0 ? null : "max_tokens";
  }
  /** The settings the next tokens are chosen under (checked as generate checks them); the
      seed's generator goes on as it was (reseed starts another). */
  Generation.prototype.reconfigure = function (settings) {
    var cfg = config(settings);
    checkStopCharacters(this.chars, cfg);
    this.cfg = cfg;
  };
  /** The next draws use the generator of `seed` from its `skip`-th number on. */
  Generation.prototype.reseed = function (seed, skip) {
    this.random = generator(seed);
    for (var i = 0; i < skip; i++) this.random();
  };
  /** Forget the new tokens after the first `length` (a reader going back); it goes on. */
  Generation.prototype.rewind = function (length) {
    this.ids = this.ids.slice(0, length);
    this.logprobs = this.logprobs.slice(0, length);
    this.text = this.ids.map(function (id) { return this.chars[id]; }, this).join("");
    this.stopReason = this.ids.length < this.maxNewTokens ? null : "max_tokens";
  };
  /** The ids the model sees before the next character (the history the penalties count),
      or null when the generation has ended (see stopReason). */
  Generation.prototype.context = function () {
    if (this.stopReason) return null;
    if (!this.slide && this.promptIds.length + this.ids.length >= this.block) {
      this.stopReason = "context_window";
      return null;
    }
    return this.window();
  };
  /** The ids the model would see before the next character, whether or not it comes. */
  Generation.prototype.window = function () {
    var all = this.promptIds.concat(this.ids);
    return this.slide ? all.slice(windowStart(all.length, this.block)) : all;
  };
  /** Why a text ends after its latest token (stopping.StopCheck.reason, without a
      constraint): "stop_sequence" when it ends with one of cfg.stop, "max_tokens" when it
      has `newTokens` === `maxNewTokens`, else null. */
  function stopReason(cfg, text, newTokens, maxNewTokens) {
    if (cfg.stop.some(function (s) { return text.endsWith(s); })) return "stop_sequence";
    return newTokens === maxNewTokens ? "max_tokens" : null;
  }
  /** Choose the next character from the model's `logits` after `context()` (or take `id`,
      a reader's choice): {id, char, probs (the distribution it was drawn from), stopReason}. */
  Generation.prototype.push = function (logits, id) {
    var history = this.context();
    if (history === null) throw new Error("the generation has ended (" + this.stopReason + ")");
    var shaped = shape(logits, history, this.cfg, given(id) ? null : this.random);
    if (!given(id)) id = choose(shaped, this.cfg, this.random);
    this.ids.push(id);
    this.logprobs.push(logSoftmax(logits)[id]);
    this.text += this.chars[id];
    this.stopReason = stopReason(this.cfg, this.text, this.ids.length, this.maxNewTokens);
    return { id: id, char: this.chars[id], probs: distribution(shaped, this.cfg), stopReason: this.stopReason };
  };
  Generation.prototype.result = function () {
    return { text: this.text, ids: this.ids.slice(), logprobs: this.logprobs.slice(), stopReason: this.stopReason };
  };
  /** generate's loop: up to `steps` more tokens of `g` (all it has left when null), each
      chosen from `model([context])`'s one row of logits (model: contexts, arrays of ids, ->
      logits rows, or a Promise of them), then onStep(chosen, logits, context) (a Promise it
      returns is waited for). Returns g.result(), or a Promise of it. */
  function run(g, model, steps, onStep) {
    var left = given(steps) ? steps : Infinity;
    return repeat(function () {
      var context = left > 0 ? g.context() : null;
      if (context === null) return g.result();
      left--;
      return andThen(model([context]), function (rows) {
        var chosen = g.push(rows[0]);
        return andThen(onStep ? onStep(chosen, rows[0], context) : null, function () {});
      });
    });
  }

  return {
    TOL: TOL, FIELDS: FIELDS, ORDER: ORDER, repr: repr, valueError: valueError,
    logSoftmax: logSoftmax, softmax: softmax, entropyBits: entropyBits, argmax: argmax, order: order,
    temperature: temperature, top_n_sigma: topNSigma, xtc: xtc, top_k: topK, top_p: topP, min_p: minP, typical_p: typical,
    epsilon: epsilon, eta: eta, eta_threshold: etaThreshold,
    counts: counts, repetition_penalty: repetitionPenalty, frequency_penalty: frequencyPenalty,
    presence_penalty: presencePenalty, validate: validate, compose: compose,
    stops: stops, config: config, isGreedy: isGreedy, penalties: penalties, truncation: truncation,
    refuseAllBut: refuseAllBut, shape: shape, distribution: distribution, probs: probs, generator: generator,
    drawWith: drawWith, draw: draw, choose: choose, checkCount: checkCount, checkNumber: checkNumber,
    checkMaxNewTokens: checkMaxNewTokens, checkStopCharacters: checkStopCharacters, checkOverflow: checkOverflow, encode: encode, encodePrompt: encodePrompt,
    windowStart: windowStart, windowEnd: windowEnd, stopReason: stopReason, andThen: andThen, repeat: repeat,
    Generation: Generation, run: run
  };
})();
if (typeof module !== "undefined" && module.exports) module.exports = SlmDecoding;
