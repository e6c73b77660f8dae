/* The book's model, live in the page. ONNX Runtime Web (WebAssembly, one thread) runs the
   graphs that `python -m shakespeare_lm.interop.export` writes: they take the new characters and the
   KV cache, and return the logits and the grown cache. `make book` vendors the runtime, its
   binary and the graphs into _static/live/ twice: as binary files (gzipped), which a served
   page fetches, and as scripts (gzip + base64), because a page opened from file:// may not
   fetch, but may run <script src>. Nothing leaves the machine.

   Nothing loads until something asks for a model: an explorer when the reader reaches it
   (loadWhenReached: scrolls it into view, focuses or presses on it), or a call below. Until
   then the page knows the models' configs and the files' sizes (live/manifest.js).

     await slm.ready                                 // the target model is loaded (reading it asks)
     await slm.nextDistribution("KATHARINA:\n")      // [p(char 0), ..., p(char V-1)]
     await slm.generate(prompt, n, {temperature: 0.8, top_p: 0.95, stop: ["\n\n"]}, seed)

   generate takes what Python's slm.generate takes, under the same names and with the same
   meaning and error messages: temperature (0 = greedy), top_k, top_p, min_p, typical_p,
   epsilon, eta, repetition_penalty, frequency_penalty, presence_penalty (they count the
   prompt and the text so far), seed, stop (a string or a list of strings; the text ends at
   the end of any of them, kept in it) and context_overflow ("stop", the default, or
   "slide"). This file decides nothing: the algorithms are the DOM-free modules of
   shakespeare_lm/site/static/, each tested against Python, which the page loads before it
   (book/_ext/live_explorers.py): decoding.js (the rules, the sampler and generate's token
   loop; slm.decoding), beam.js (beam and exact search; slm.beam) and speculative.js (the
   n-gram draft and speculative rounds; slm.speculativeDecoding). Here the model answers them:
   slm.modelFunction(model) is the function from contexts to logits that they call. A seeded
   generator makes sampling reproducible (the same seed gives the same text here, not the
   same text as Python; greedy text is Python's).

   Scripts are loaded by slmVega.loadScript (book/_js/slm_vega.js, loaded before this file). */
(function () {
  "use strict";
  if (window.slm) return;
  if (!window.slmVega) throw new Error("slm_runtime.js needs slm_vega.js (the site's script loader) loaded before it");
  if (!window.SlmDecoding || !window.SlmBeam || !window.SlmSpeculative) {
    throw new Error("slm_runtime.js needs live/decoding.js, live/beam.js and live/speculative.js loaded before it: " +
                    "build the site with make book");
  }
  var MANIFEST = window.SLM_ASSETS && window.SLM_ASSETS.manifest;
  if (!MANIFEST) throw new Error("slm_runtime.js needs live/manifest.js loaded before it: build the site with make book");
  var D = window.SlmDecoding, S = window.SlmSpeculative;
  var me = document.currentScript && document.currentScript.src;
  var LIVE = me.substring(0, me.lastIndexOf("/") + 1) + "live/";
  var SERVED = location.protocol === "http:" || location.protocol === "https:";  // else file://: no fetch
  var ORT_SCRIPT = "ort.wasm.min.js", ORT_MODULE = "ort-wasm-simd-threaded.mjs";
  var models = {}, ortPromise = null, timings = {};
  function mark(what) { timings[what] = Math.round(performance.now()); }  // ms since navigation

  // --- what loads, and how large it is -------------------------------------------------------
  /** The files of _static/live/ that `part` ("runtime", or a model's name) loads, as this page
      gets them: binaries when served, scripts from file://. */
  function filesOf(part) {
    if (part === "runtime") {
      return SERVED ? [ORT_SCRIPT, ORT_MODULE, ORT_MODULE.replace(".mjs", ".wasm.gz")] : [ORT_SCRIPT, "ort_wasm.js"];
    }
    return ["model_" + part + (SERVED ? ".onnx.gz" : ".js")];
  }
  function megabytes(part) {
    var bytes = filesOf(part).reduce(function (sum, f) { return sum + MANIFEST.sizes[f]; }, 0);
    return (bytes / 1e6).toFixed(1) + " MB";
  }
  /** What loading the model `name` (the target by default) still has to bring, in words. */
  function toLoad(name) {
    name = name || "shakespeare";
    var what = (name === "shakespeare" ? "the target model" : "the " + name + " model") + " (" + megabytes(name) + ")";
    return ortPromise ? what : what + " and ONNX Runtime (" + megabytes("runtime") + ")";
  }

  // --- loading: bytes (fetched, or from scripts), then an ONNX Runtime session ----------------
  /** A script of _static/live/ (a Promise, once per page). */
  function loadAsset(name) { return window.slmVega.loadScript(LIVE + name); }
  /* `bytes` gunzipped, if they are gzip (a server may have unzipped them on the way): a Promise. */
  function gunzip(bytes) {
    if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) return Promise.resolve(bytes);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).arrayBuffer().then(function (b) { return new Uint8Array(b); });
  }
  function unpack(b64) {
    if (Uint8Array.fromBase64) return gunzip(Uint8Array.fromBase64(b64));
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return gunzip(bytes);
  }
  /* A binary file of _static/live/, fetched into memory and gunzipped. */
  function fetchBytes(name) {
    return fetch(LIVE + name).then(function (r) {
      if (!r.ok) throw new Error("could not load " + LIVE + name + " (HTTP " + r.status + "): build the site with make book");
      return r.arrayBuffer();
    }).then(function (b) { return gunzip(new Uint8Array(b)); });
  }
  function asset(key) {
    var a = window.SLM_ASSETS[key];
    delete window.SLM_ASSETS[key];  // the decoded bytes are all we keep
    return a;
  }
  /* ONNX Runtime's binary, and the URL of the module that instantiates it: the file when
     served; from file://, a module made in memory (such a page may not import files). */
  function ortBinary() {
    if (SERVED) {
      return fetchBytes(filesOf("runtime")[2]).then(function (wasm) { return { wasm: wasm, module: LIVE + ORT_MODULE }; });
    }
    return loadAsset("ort_wasm.js").then(function () {
      var a = asset("ort");
      return unpack(a.wasm_gz_b64).then(function (wasm) {
        return { wasm: wasm, module: URL.createObjectURL(new Blob([a.glue], { type: "text/javascript" })) };
      });
    });
  }
  function loadOrt() {
    if (!ortPromise) ortPromise = Promise.all([loadAsset(ORT_SCRIPT), ortBinary()]).then(function (r) {
      mark("runtime bytes");
      var ort = window.ort;
      ort.env.wasm.numThreads = 1;  // no SharedArrayBuffer to share without cross-origin isolation
      ort.env.wasm.proxy = false;   // no worker: the page's own thread runs the model
      ort.env.wasm.wasmBinary = r[1].wasm;
      ort.env.wasm.wasmPaths = { mjs: r[1].module };
      return ort;
    });
    return ortPromise;
  }
  function modelBytes(name) {
    var file = filesOf(name)[0];
    if (SERVED) return fetchBytes(file);
    return loadAsset(file).then(function () { return unpack(asset("model_" + name).onnx_gz_b64); });
  }
  /** The model `name` ("shakespeare", the target, or "draft"): a Promise of {name, config,
      chars, session, ort}. The first call is the first ask: it starts the loading. */
  function load(name) {
    name = name || "shakespeare";
    if (models[name]) return models[name];
    if (!Object.prototype.hasOwnProperty.call(MANIFEST.models, name)) {
      return Promise.reject(new Error("model " + JSON.stringify(name) + " is unknown: the site has " +
                                      Object.keys(MANIFEST.models).map(function (k) { return JSON.stringify(k); }).join(" and ")));
    }
    asked();
    models[name] = Promise.all([loadOrt(), modelBytes(name)]).then(function (r) {  // unpacked while the runtime compiles
      mark(name + " bytes");
      return r[0].InferenceSession.create(r[1], { executionProviders: ["wasm"], graphOptimizationLevel: "all" })
        .then(function (session) {
          mark(name + " session");
          return { name: name, config: configOf(name), chars: MANIFEST.chars, session: session, ort: r[0] };
        });
    });
    return models[name];
  }
  function configOf(name) {
    var c = Object.assign({}, MANIFEST.models[name]);
    c.head_dim = c.d_model / c.n_head;
    return c;
  }
  function decode(model, ids) { return ids.map(function (i) { return model.chars[i]; }).join(""); }

  // --- when: the reader reaches an explorer, or anything asks ----------------------------------
  var release, anyAsk = new Promise(function (resolve) { release = resolve; });
  function asked() {
    if (timings.asked === undefined) mark("asked");
    release();
  }
  /** A Promise that resolves when the reader reaches `element`: scrolls the page while it is
      in view (one on screen when the page opens waits for the first scroll, so that opening
      a page loads no model), focuses it or presses on it; or when anything asks for a model. */
  function reached(element) {
    return new Promise(function (resolve) {
      var scrolled = false, inView = false;
      var watch = new IntersectionObserver(function (entries) {
        inView = entries[entries.length - 1].isIntersecting;
        if (inView && scrolled) done();
      });
      function onScroll() { scrolled = true; if (inView) done(); }
      function done() {
        watch.disconnect();
        window.removeEventListener("scroll", onScroll);
        element.removeEventListener("pointerdown", done, true);
        element.removeEventListener("focusin", done);
        resolve();
      }
      watch.observe(element);
      window.addEventListener("scroll", onScroll, { passive: true });  // the page's, not a sidebar's
      element.addEventListener("pointerdown", done, true);  // a disabled button's press too
      element.addEventListener("focusin", done);
      anyAsk.then(done);
    });
  }
  /** The target model, loaded once the reader reaches `element` (an explorer), and with it
      Vega, which draws the explorers' charts (slmVega.ready). say(text) is told what will
      load and how large it is, then that it is loading. A Promise of the model (load's);
      readyText() then says how long the model took. */
  function loadWhenReached(element, say) {
    say(toLoad() + " will load when you scroll to this explorer or click it");
    return reached(element).then(function () {
      say("loading " + toLoad() + "\u2026");
      return Promise.all([load(), window.slmVega.ready]);
    }).then(function (r) { return r[0]; });
  }
  /** "ready in 2.1 s": from the first ask to the target's session, once it is ready. */
  function readyText() {
    var t = timings["shakespeare session"];
    return t === undefined ? "" : "ready in " + ((t - timings.asked) / 1000).toFixed(1) + " s";
  }

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
    var c = this.model.config, hs = c.head_dim, blocks = c.n_layer * c.n_head, ort = this.model.ort;
    function cut(t) {  // (L, 1, nh, P, hs) -> (L, 1, nh, length, hs)
      var out = new Float32Array(blocks * length * hs);
      for (var b = 0; b < blocks; b++) out.set(t.data.subarray(b * P * hs, b * P * hs + length * hs), b * length * hs);
      return new ort.Tensor("float32", out, [c.n_layer, 1, c.n_head, length, hs]);
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
  /* A second handle on the same cache: its tensors are never written, only replaced. */
  Stream.prototype.fork = function () {
    var f = new Stream(this.model);
    f.ids = this.ids.slice();
    f.k = this.k;
    f.v = this.v;
    return f;
  };

  // --- the model as the algorithms see it ---------------------------------------------------
  var POOL = 20;    // KV caches kept (a beam of 8, greedy's line and their parents)
  var MEMO = 4096;  // logits rows kept, by context
  function key(ids) { return ids.join(","); }
  function common(a, b) {
    var n = 0, limit = Math.min(a.length, b.length);
    while (n < limit && a[n] === b[n]) n++;
    return n;
  }
  function isPrefix(a, b) { return a.length <= b.length && common(a, b) === a.length; }
  /** The model `m` as decoding.js, beam.js and speculative.js call it: a function from
      contexts (arrays of at most block_size ids) to a Promise of their next-character logits
      (a Float32Array (V) each). It keeps the KV caches of the last POOL contexts it ran and
      the logits of the last MEMO; a context runs from the kept cache that shares the
      longest prefix with it, and the contexts that are prefixes of another run with it, in
      one pass (a speculative round's verification). fn.passes counts its forward passes,
      fn.fed the characters its latest call fed. */
  function modelFunction(m) {
    var pool = [], memo = new Map();
    function remember(ids, row, got) {
      var k = key(ids);
      memo.set(k, row);
      if (memo.size > MEMO) memo.delete(memo.keys().next().value);
      if (got.has(k)) got.set(k, row);
    }
    function nearest(ids) {  // the kept cache with the longest common prefix (the latest on ties)
      var best = null, most = 0;
      pool.forEach(function (s) { var n = common(s.ids, ids); if (n >= most && n > 0) { best = s; most = n; } });
      return best;
    }
    /* One pass: the cache nearest `ids`, cut to at most `shortest` - 1 ids, then fed the rest. */
    function runOne(ids, shortest, got) {
      var base = nearest(ids), stream = base ? base.fork() : new Stream(m);
      stream.truncate(shortest - 1);
      return stream.advanceTo(ids).then(function (rows) {
        var first = ids.length - rows.length;
        rows.forEach(function (row, j) { remember(ids.slice(0, first + j + 1), row, got); });
        fn.passes++;
        fn.fed += rows.length;
        pool.push(stream);
        if (pool.length > POOL) pool.shift();
      });
    }
    /* Every context of `got` (key -> its row, null until run): the longest first, with the
       contexts that are its prefixes. */
    function runAll(contexts, got) {
      var pending = contexts.filter(function (c) { return got.get(key(c)) === null; });
      if (!pending.length) return Promise.resolve();
      var longest = pending.reduce(function (a, b) { return b.length > a.length ? b : a; });
      var inside = pending.filter(function (c) { return isPrefix(c, longest); });
      var shortest = Math.min.apply(null, inside.map(function (c) { return c.length; }));
      return runOne(longest, shortest, got).then(function () { return runAll(pending, got); });
    }
    function fn(contexts) {
      var got = new Map();
      contexts.forEach(function (c) { var k = key(c); got.set(k, memo.has(k) ? memo.get(k) : null); });
      fn.fed = 0;
      return runAll(contexts, got).then(function () {
        return contexts.map(function (c) { return got.get(key(c)); });
      });
    }
    fn.passes = 0;
    fn.fed = 0;
    fn.model = m;
    return fn;
  }

  // --- the n-gram draft: chapter 6's NGramDraft, counted from the training text ----------
  var ngramPromise = null;
  /** The n-gram draft of _static/live/ngram.js (shakespeare_lm.site.book.ngram_asset): a
      Promise of speculative.js's NGram {name, order, smoothing, probs(ids), ...}, whose
      probabilities and draws are Python's NGramDraft's, operation for operation. */
  function loadNgram() {
    if (!ngramPromise) ngramPromise = Promise.all([loadAsset("ngram.js"), load()]).then(function (r) {
      var a = asset("ngram"), model = r[1];
      if (a.chars !== model.chars) throw new Error("the n-gram's characters are not the model's: rebuild the site with make book");
      return Promise.all(a.levels.map(function (level) {
        return Promise.all(["contexts", "starts", "nexts", "counts"].map(function (k) { return unpack(level[k]); }))
          .then(function (b) {
            return { contexts: new Uint32Array(b[0].buffer), starts: new Uint32Array(b[1].buffer), nexts: b[2],
                     counts: new Uint32Array(b[3].buffer) };
          });
      })).then(function (levels) {
        mark("n-gram");
        return new S.NGram({ name: a.name, order: a.order, smoothing: a.smoothing, vocab_size: a.vocab_size,
                             levels: levels });
      });
    });
    return ngramPromise;
  }

  // --- the public calls ----------------------------------------------------------------------
  /** The model's next-character logits after `context` (its last block_size characters):
      a Promise of {logits (V), ids (what the model saw, the history the penalties count)}. */
  function nextLogits(context, name) {
    return load(name).then(function (m) {
      if (!context) throw new Error("the context is empty: the model needs at least one character");
      var ids = D.encode(m.chars, context).slice(-m.config.block_size);
      return new Stream(m).feed(ids).then(function (rows) {
        return { logits: Array.from(rows[rows.length - 1]), ids: ids };
      });
    });
  }
  /** The next-character probabilities after `context` (its last block_size characters). */
  function nextDistribution(context, name) {
    return nextLogits(context, name).then(function (r) { return D.softmax(r.logits); });
  }
  /* `settings` with `seed` (an argument of generate) in it; given twice, they must agree. */
  function seeded(settings, seed) {
    if (settings !== undefined && settings !== null && (typeof settings !== "object" || Array.isArray(settings))) {
      D.config(settings);  // refused with config's message
    }
    var s = Object.assign({}, settings);
    if (seed === undefined || seed === null) return s;
    if (s.seed !== undefined && s.seed !== null && s.seed !== seed) {
      throw D.valueError("seed=" + D.repr(seed) + " and settings.seed=" + D.repr(s.seed) +
                         " disagree: give the seed once");
    }
    s.seed = seed;
    return s;
  }
  /** Continue `prompt` by up to `n` characters under `settings` (as Python's generate:
      DecodingConfig's fields and context_overflow) and `seed`, one character per step
      (decoding.js's Generation and its loop, run), calling onStep({id, char, probs, logits,
      cacheLength}) after each; a Promise of {text, ids, logprobs, stopReason}. */
  function sample(prompt, n, settings, seed, onStep, name) {
    return load(name).then(function (m) {
      var s = seeded(settings, seed), overflow = s.context_overflow;
      delete s.context_overflow;
      var g = new D.Generation(m.chars, m.config.block_size, prompt, n, s, overflow);
      return D.run(g, modelFunction(m), null, onStep && function (chosen, logits, context) {
        return onStep({ id: chosen.id, char: chosen.char, probs: chosen.probs, logits: logits,
                        cacheLength: context.length });
      });
    });
  }
  /** The text of sample(...): `settings` as in Python's slm.generate, `seed` an integer. */
  function generate(prompt, n, settings, seed) {
    return sample(prompt, n, settings, seed).then(function (r) { return r.text; });
  }

  /** Speculative decoding (Leviathan et al. 2023; speculative.js) with `draft`, "draft" (the
      draft model, the default) or "ngram" (loadNgram's n-gram): each round the draft
      proposes up to `gamma` characters, the target model scores them all in one pass, and
      each is kept with probability min(1, p/q); the first rejection is replaced by a draw from
      max(p - q, 0), and if all are kept a bonus character comes from the target model. Both
      models use the same sampler (`settings` as generate's; the penalties count the text so
      far and the proposals before each). The text slides through context windows as
      generate(context_overflow="slide") does. onRound({proposed (the round's proposals, a
      string), accepted (how many were kept), next (the target model's character), bonus (true:
      every proposal was kept and next is the bonus; false: next replaces the first rejected
      one, drawn from the residual), text, acceptance, rounds}) after each round; a Promise of
      {text, ids, rounds, drafted, proposed, accepted, acceptance, stopReason}, counted as
      Python's SpeculativeStats counts them: drafted, every proposal; proposed, those put to
      the test (up to and including the first rejection of a round: the ones after it are
      never checked); acceptance, the chapter's alpha, accepted / proposed (0 before any test). */
  var DRAFTS = { draft: "the draft model", ngram: "the n-gram of the training text" };
  function speculative(prompt, n, gamma, settings, seed, onRound, draft) {
    draft = draft === undefined || draft === null ? "draft" : draft;
    if (!Object.prototype.hasOwnProperty.call(DRAFTS, draft)) {
      return Promise.reject(new Error("draft=" + JSON.stringify(draft) + " is invalid: draft must be " +
        Object.keys(DRAFTS).map(function (k) { return JSON.stringify(k) + " (" + DRAFTS[k] + ")"; }).join(" or ")));
    }
    return Promise.all([load("shakespeare"), draft === "ngram" ? loadNgram() : load("draft")]).then(function (ms) {
      var target = ms[0], block = target.config.block_size, drafter = ms[1];
      if (draft === "draft") {
        block = Math.min(block, drafter.config.block_size);
        drafter = S.modelDraft(modelFunction(drafter), "draft model");
      }
      var each = onRound && function (r) {
        return onRound({ proposed: decode(target, r.proposals), accepted: r.accepted, next: target.chars[r.token],
                         bonus: r.bonus, text: r.text, acceptance: r.stats.acceptance, rounds: r.stats.rounds });
      };
      return S.speculativeDecode(modelFunction(target), drafter, target.chars, block, prompt, n, gamma,
                                 seeded(settings, seed), { overflow: "slide", onRound: each });
    }).then(function (r) {
      var st = r.stats;
      return { text: r.text, ids: r.ids, rounds: st.rounds, drafted: st.drafted, proposed: st.proposed,
               accepted: st.accepted, acceptance: st.acceptance, stopReason: r.stopReason };
    });
  }

  /** Plain decoding against speculative decoding with the n-gram, timed side by side (the
      race of chapter 6): one untimed run of `warmUp` characters of each, then `pairs` pairs of
      `n`-character runs after `prompt`, one of each, plain first in even pairs and
      speculative first in odd ones, both with seed `seed` + i and `settings` (generate's).
      Plain decoding slides through context windows as speculative decoding does, so both
      write all n characters. onPair(pair) after each pair (the page redraws before the next);
      a Promise of the pairs, each {pair, seed, plain_ms, spec_ms (milliseconds a
      character), ratio (plain_ms / spec_ms), plain_text, spec_text, and the speculative
      run's rounds, accepted, proposed and chars}. */
  function race(prompt, n, gamma, settings, seed, pairs, warmUp, onPair) {
    var runs = {
      plain: function (sd, k) { return sample(prompt, k, Object.assign({ context_overflow: "slide" }, settings), sd); },
      spec: function (sd, k) { return speculative(prompt, k, gamma, settings, sd, null, "ngram"); }
    };
    var out = [];
    function timed(what, sd) {
      var t0 = performance.now();
      return runs[what](sd, n).then(function (r) { return { ms: performance.now() - t0, r: r }; });
    }
    function pair(i) {
      if (i === pairs) return out;
      var sd = seed + i, order = i % 2 ? ["spec", "plain"] : ["plain", "spec"], got = {};
      return new Promise(function (r) { setTimeout(r, 0); })  // let the page redraw
        .then(function () { return timed(order[0], sd); })
        .then(function (a) { got[order[0]] = a; return timed(order[1], sd); })
        .then(function (b) {
          got[order[1]] = b;
          var plain = got.plain.r, sp = got.spec.r;
          var p = { pair: i + 1, seed: sd, plain_ms: got.plain.ms / plain.ids.length, spec_ms: got.spec.ms / sp.text.length,
                    plain_text: plain.text, spec_text: sp.text, rounds: sp.rounds, accepted: sp.accepted,
                    proposed: sp.proposed, chars: sp.text.length };
          p.ratio = p.plain_ms / p.spec_ms;
          out.push(p);
          if (onPair) onPair(p);
          return pair(i + 1);
        });
    }
    return runs.spec(seed, warmUp).then(function () { return runs.plain(seed, warmUp); })
      .then(function () { return pair(0); });
  }

  var api = {
    decoding: D, beam: window.SlmBeam, speculativeDecoding: S,
    chars: MANIFEST.chars, config: configOf("shakespeare"), files: MANIFEST.sizes,
    load: load, loadWhenReached: loadWhenReached, toLoad: toLoad, readyText: readyText,
    loadAsset: loadAsset, nextLogits: nextLogits, nextDistribution: nextDistribution,
    generate: generate, sample: sample, speculative: speculative, race: race, timings: timings,
    loadNgram: loadNgram, modelFunction: modelFunction,
    Stream: Stream, decode: decode,
    encode: function (text) { return load().then(function (m) { return D.encode(m.chars, text); }); }
  };
  var ready = null;
  /* slm.ready: a Promise of slm once the target model is loaded; reading it asks for it. */
  Object.defineProperty(api, "ready", { enumerable: true, get: function () {
    if (!ready) ready = load("shakespeare").then(function () { return api; });
    return ready;
  } });
  window.slm = api;
})();
