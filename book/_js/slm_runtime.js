/* The book's model, live in the page. ONNX Runtime Web (WebAssembly, one thread) runs the
   graphs that `python -m shakespeare_lm.interop.export` writes: they take the new characters and the
   KV cache, and return the logits and the grown cache. `make book` vendors the runtime, its
   binary and the graphs into _static/live/ as scripts (gzip + base64), because a page opened
   from file:// may not fetch, but may run <script src>. Nothing leaves the machine.

     await slm.ready                                 // the main model is loaded
     await slm.nextDistribution("KATHARINA:\n")      // [p(char 0), ..., p(char V-1)]
     await slm.generate(prompt, n, {temperature: 0.8, top_p: 0.95}, seed)   // the text

   settings use the keyword names of slm.generate in Python: temperature (0 = greedy),
   top_k, top_p, min_p, typical_p, epsilon, eta, repetition_penalty, and stop. The rules are
   RulesExplorer's (shakespeare_lm/site/static/rules_explorer.js, tested against rules.py), applied
   in rules.ORDER after the repetition penalty; a seeded generator makes sampling
   reproducible (the same seed gives the same text here, not the same text as Python). */
(function () {
  "use strict";
  if (window.slm) return;
  var me = document.currentScript && document.currentScript.src;
  var LIVE = me.substring(0, me.lastIndexOf("/") + 1) + "live/";
  var RULES = ["temperature", "top_k", "top_p", "min_p", "typical_p", "epsilon", "eta"];
  var KNOWN = ["repetition_penalty"].concat(RULES, ["stop"]);
  var scripts = {}, models = {}, ortPromise = null, timings = {};
  function mark(what) { timings[what] = Math.round(performance.now()); }  // ms since navigation

  // --- loading: scripts, then gzip+base64 -> bytes, then an ONNX Runtime session -------
  function loadScript(name) {
    if (!scripts[name]) scripts[name] = new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = LIVE + name;
      s.onload = function () { resolve(); };
      s.onerror = function () { reject(new Error("could not load " + s.src + ": build the site with `make book`")); };
      document.head.appendChild(s);
    });
    return scripts[name];
  }
  function unpack(b64) {
    var bytes;
    if (Uint8Array.fromBase64) bytes = Uint8Array.fromBase64(b64);
    else {
      var bin = atob(b64);
      bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).arrayBuffer().then(function (b) { return new Uint8Array(b); });
  }
  function asset(key) {
    var a = window.SLM_ASSETS[key];
    delete window.SLM_ASSETS[key];  // the decoded bytes are all we keep
    return a;
  }
  function loadOrt() {
    if (!ortPromise) ortPromise = Promise.all([loadScript("ort.wasm.min.js"), loadScript("ort_wasm.js")])
      .then(function () {
        var a = asset("ort");
        mark("runtime scripts");
        return unpack(a.wasm_gz_b64).then(function (wasm) {
          mark("wasm bytes");
          var ort = window.ort;
          ort.env.wasm.numThreads = 1;  // no SharedArrayBuffer on a file:// page
          ort.env.wasm.proxy = false;
          ort.env.wasm.wasmBinary = wasm;
          // the module that instantiates the binary, from memory (file:// forbids importing files)
          ort.env.wasm.wasmPaths = { mjs: URL.createObjectURL(new Blob([a.glue], { type: "text/javascript" })) };
          return ort;
        });
      });
    return ortPromise;
  }
  /** The model `name` ("shakespeare" or "draft"): a Promise of {name, config, chars, session}. */
  function load(name) {
    name = name || "shakespeare";
    if (models[name]) return models[name];
    var a;
    var bytes = loadScript("model_" + name + ".js").then(function () {  // unpacked while the runtime compiles
      a = asset("model_" + name);
      return unpack(a.onnx_gz_b64);
    });
    models[name] = Promise.all([loadOrt(), bytes, loadScript("rules_explorer.js")]).then(function (r) {
      mark(name + " bytes");
      return r[0].InferenceSession.create(r[1], { executionProviders: ["wasm"], graphOptimizationLevel: "all" })
        .then(function (session) {
          mark(name + " session");
          a.config.head_dim = a.config.d_model / a.config.n_head;
          return { name: name, config: a.config, chars: a.chars, session: session, ort: r[0] };
        });
    });
    return models[name];
  }

  // --- tokenizer -------------------------------------------------------------------------
  function encode(model, text) {
    var ids = [];
    for (var i = 0; i < text.length; i++) {
      var id = model.chars.indexOf(text[i]);
      if (id < 0) throw new Error("character " + JSON.stringify(text[i]) + " at position " + i +
        " is not in the vocabulary; the model knows only these " + model.chars.length +
        " characters: " + JSON.stringify(model.chars));
      ids.push(id);
    }
    return ids;
  }
  function decode(model, ids) { return ids.map(function (i) { return model.chars[i]; }).join(""); }

  // --- a KV cache and the ids it holds: feed characters, get their next-character logits ---
  function Stream(model) {
    this.model = model;
    this.ids = [];
    this.k = this.v = this.empty();
  }
  Stream.prototype.empty = function () {
    var c = this.model.config;
    return new this.model.ort.Tensor("float32", new Float32Array(0), [c.n_layer, 1, c.n_head, 0, c.head_dim]);
  };
  /* Keep only the first `length` slots of the cache (a rejected draft, a new context). */
  Stream.prototype.truncate = function (length) {
    var P = this.ids.length;
    if (length >= P) return;
    this.ids = this.ids.slice(0, length);
    if (length === 0) { this.k = this.v = this.empty(); return; }
    var c = this.model.config, D = c.head_dim, blocks = c.n_layer * c.n_head, ort = this.model.ort;
    function cut(t) {  // (L, 1, nh, P, hs) -> (L, 1, nh, length, hs)
      var out = new Float32Array(blocks * length * D);
      for (var b = 0; b < blocks; b++) out.set(t.data.subarray(b * P * D, b * P * D + length * D), b * length * D);
      return new ort.Tensor("float32", out, [c.n_layer, 1, c.n_head, length, D]);
    }
    this.k = cut(this.k);
    this.v = cut(this.v);
  };
  /* One forward pass over `ids` after the cached ones: a Promise of their logits, one
     Float32Array (V) per id. */
  Stream.prototype.feed = function (ids) {
    var self = this, m = this.model, V = m.config.vocab_size;
    if (this.ids.length + ids.length > m.config.block_size)
      return Promise.reject(new Error("the context window of " + m.config.block_size + " characters is full"));
    var idx = new m.ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, ids.length]);
    return m.session.run({ idx: idx, past_k: this.k, past_v: this.v }).then(function (out) {
      self.k = out.present_k;
      self.v = out.present_v;
      self.ids = self.ids.concat(ids);
      var rows = [];
      for (var t = 0; t < ids.length; t++) rows.push(out.logits.data.slice(t * V, (t + 1) * V));
      return rows;
    });
  };
  /* Make the cache hold `ids` (keeping the longest common prefix, at least the last id is
     run): a Promise of the logits rows of the ids that were run; the last row is the
     distribution of the character after `ids`. */
  Stream.prototype.advanceTo = function (ids) {
    var n = 0, limit = Math.min(this.ids.length, ids.length - 1);
    while (n < limit && this.ids[n] === ids[n]) n++;
    this.truncate(n);
    return this.feed(ids.slice(n));
  };

  // --- decoding rules and the sampler ------------------------------------------------------
  function checkSettings(settings) {
    settings = settings || {};
    var unknown = Object.keys(settings).filter(function (k) { return KNOWN.indexOf(k) < 0; });
    if (unknown.length) throw new Error("unknown decoding rule(s) " + JSON.stringify(unknown) + "; known: " + JSON.stringify(KNOWN));
    var t = settings.temperature === undefined || settings.temperature === null ? 1 : settings.temperature;
    if (!(typeof t === "number" && t >= 0 && isFinite(t)))
      throw new Error("temperature=" + t + " is invalid: temperature must be a number >= 0 (0 means greedy)");
    var rp = settings.repetition_penalty;
    if (rp !== undefined && rp !== null && !(typeof rp === "number" && rp > 0 && isFinite(rp)))
      throw new Error("repetition_penalty=" + rp + " is invalid: repetition_penalty must be a number > 0");
    var out = { temperature: t, repetition_penalty: rp === undefined ? null : rp, stop: settings.stop || null };
    RULES.slice(1).forEach(function (k) { out[k] = settings[k] === undefined ? null : settings[k]; });
    if (t > 0) window.RulesExplorer.compose([0, 1], out);  // bad values throw now, not mid-text
    return out;
  }
  /* CTRL's penalty (Keskar et al. 2019), as rules.repetition_penalty: a character seen in
     `history` has a positive logit divided by the penalty and a negative one multiplied. */
  function repetitionPenalty(logits, history, penalty) {
    var seen = {};
    history.forEach(function (id) { seen[id] = true; });
    return Array.prototype.map.call(logits, function (x, i) {
      return seen[i] ? (x > 0 ? x / penalty : x * penalty) : x;
    });
  }
  /* The distribution the next character is drawn from (all mass on the argmax when greedy):
     the penalty, then the rules in order, then softmax. */
  function shaped(logits, history, settings) {
    var l = settings.repetition_penalty === null ? Array.from(logits)
      : repetitionPenalty(logits, history, settings.repetition_penalty);
    return window.RulesExplorer.surviving(l, settings);
  }
  /* mulberry32: a small seeded generator of uniform numbers in [0, 1). */
  function generator(seed) {
    var a = (seed === undefined || seed === null ? Math.floor(Math.random() * 4294967296) : seed) >>> 0;
    return function () {
      a = (a + 0x6D2B79F5) | 0;
      var t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  /* Draw an id from probabilities `p` with one uniform number (inverse CDF in id order). */
  function draw(p, random) {
    var u = random(), total = 0, last = 0;
    for (var i = 0; i < p.length; i++) {
      if (p[i] > 0) { total += p[i]; last = i; if (u < total) return i; }
    }
    return last;
  }
  function softmax(logits) {
    var lp = window.RulesExplorer.logSoftmax(Array.from(logits));
    return lp.map(Math.exp);
  }
  function windowOf(model, ids, room) {
    // the model sees at most block_size characters: when the next `room` would not fit,
    // keep the last half of the window (positions restart), as generate(context_overflow="slide")
    var block = model.config.block_size;
    return ids.length + room <= block ? ids : ids.slice(-Math.floor(block / 2));
  }

  // --- the public calls ----------------------------------------------------------------------
  /** The next-character probabilities after `context` (its last block_size characters). */
  function nextDistribution(context, name) {
    return load(name).then(function (m) {
      if (!context) throw new Error("the context is empty: the model needs at least one character");
      var ids = encode(m, context).slice(-m.config.block_size);
      return new Stream(m).feed(ids).then(function (rows) { return softmax(rows[rows.length - 1]); });
    });
  }
  /** Continue `prompt` by up to `n` characters under `settings`, one character per step,
      calling onStep({id, char, probs, cacheLength}) after each; a Promise of
      {text, ids, stopReason}. */
  function sample(prompt, n, settings, seed, onStep, name) {
    return load(name).then(function (m) {
      var s = checkSettings(settings), random = generator(seed);
      var ids = encode(m, prompt), stream = new Stream(m), out = [], text = "";
      if (!ids.length) throw new Error("the prompt is empty: the model needs at least one character");
      function step() {
        if (out.length >= n) return { text: text, ids: out, stopReason: "max_tokens" };
        var context = windowOf(m, ids, 0);
        return stream.advanceTo(context).then(function (rows) {
          var probs = shaped(rows[rows.length - 1], context, s);
          var id = draw(probs, random);
          ids.push(id); out.push(id); text += m.chars[id];
          if (onStep) onStep({ id: id, char: m.chars[id], probs: probs, logits: rows[rows.length - 1],
                               cacheLength: stream.ids.length });
          if (s.stop && text.endsWith(s.stop)) return { text: text, ids: out, stopReason: "stop_sequence" };
          if (ids.length >= m.config.block_size) ids = windowOf(m, ids, 1);
          return step();
        });
      }
      return step();
    });
  }
  /** The text of sample(...): `settings` as in Python's slm.generate, `seed` an integer. */
  function generate(prompt, n, settings, seed) {
    return sample(prompt, n, settings, seed).then(function (r) { return r.text; });
  }

  /** Speculative decoding (Leviathan et al. 2023) with the draft model: each round the draft
      proposes `gamma` characters, the main model scores them all in one pass, and each is
      kept with probability min(1, p/q); the first rejection is replaced by a draw from
      max(p - q, 0), and if all are kept a bonus character comes from the main model. Both
      models use the same rules (`settings`, without the penalty). onRound({proposed,
      accepted, next, text, acceptance}) after each round; a Promise of {text, rounds,
      proposed, accepted, acceptance}. */
  function speculative(prompt, n, gamma, settings, seed, onRound) {
    return Promise.all([load("shakespeare"), load("draft")]).then(function (ms) {
      var target = ms[0], draft = ms[1], s = checkSettings(settings), random = generator(seed);
      if (s.repetition_penalty !== null) throw new Error("speculative decoding here takes no repetition_penalty");
      if (!(Number.isInteger(gamma) && gamma >= 1)) throw new Error("gamma=" + gamma + " is invalid: gamma must be an integer >= 1");
      var T = new Stream(target), D = new Stream(draft), ids = encode(target, prompt);
      var st = { text: "", rounds: 0, proposed: 0, accepted: 0, acceptance: 0 };
      if (!ids.length) throw new Error("the prompt is empty: the model needs at least one character");
      function propose(x, proposals, qs, g) {
        if (proposals.length === g) return Promise.resolve();
        return D.advanceTo(x.concat(proposals)).then(function (rows) {
          var q = shaped(rows[rows.length - 1], [], s);
          qs.push(q);
          proposals.push(draw(q, random));
          return propose(x, proposals, qs, g);
        });
      }
      function round() {
        if (st.text.length >= n) return st;
        var g = Math.min(gamma, n - st.text.length), x = windowOf(target, ids, g), proposals = [], qs = [];
        return propose(x, proposals, qs, g).then(function () {
          T.truncate(x.length - 1);  // the main model's cache holds the text but its last character
          return T.advanceTo(x.concat(proposals));
        }).then(function (rows) {
          var ps = rows.slice(-(g + 1)).map(function (r) { return shaped(r, [], s); });
          var k = 0;
          while (k < g && random() < Math.min(1, ps[k][proposals[k]] / qs[k][proposals[k]])) k++;
          var next;
          if (k < g) {  // rejected: draw from the residual max(p - q, 0), normalised
            var residual = ps[k].map(function (p, i) { return Math.max(p - qs[k][i], 0); });
            var total = residual.reduce(function (a, b) { return a + b; }, 0);
            next = draw(total > 0 ? residual.map(function (r) { return r / total; }) : ps[k], random);
          } else next = draw(ps[g], random);  // all kept: a bonus character
          var emitted = proposals.slice(0, k).concat([next]).slice(0, n - st.text.length);
          ids = x.concat(emitted);
          st.text += decode(target, emitted);
          st.rounds++; st.proposed += g; st.accepted += k; st.acceptance = st.accepted / st.proposed;
          if (onRound) onRound({ proposed: decode(target, proposals), accepted: k, next: target.chars[next],
                                 text: st.text, acceptance: st.acceptance, rounds: st.rounds });
          return round();
        });
      }
      return round();
    });
  }

  window.slm = {
    ready: load("shakespeare").then(function (m) { window.slm.chars = m.chars; window.slm.config = m.config; return window.slm; }),
    load: load, nextDistribution: nextDistribution, generate: generate, sample: sample,
    speculative: speculative, timings: timings,
    encode: function (text) { return load().then(function (m) { return encode(m, text); }); },
    tokenize: encode,
    Stream: Stream, checkSettings: checkSettings, shaped: shaped, generator: generator, draw: draw,
    softmax: softmax, repetitionPenalty: repetitionPenalty, windowOf: windowOf, decode: decode,
    loadScript: loadScript
  };
})();
