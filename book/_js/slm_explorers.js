/* The live explorers of the static site (shakespeare_lm.site.live): a text box for the reader's
   own context, Sample and Continue buttons, and the real model behind them (slm_runtime.js,
   whose decoding is decoding.js: the explorers decide nothing themselves). The page loads
   slm_vega.js, slm_runtime.js and this file in that order (book/_ext/live_explorers.py).
   Every .slm-live element on the page is mounted once:

     truncation    the next-character distribution under every rule, and continuations
     step          generation one character at a time, the KV cache filling slot by slot
     speculative   the draft proposes, the main model keeps or rejects, acceptance so far

   The controls' limits that depend on the model (top-k's maximum) come from its config. */
(function () {
  "use strict";
  if (window.slmExplorers) { window.slmExplorers.mountAll(); return; }
  /* name, label, min, max, step, value that switches the rule off ("V": the vocabulary's size) */
  var RULE_INPUTS = [
    ["temperature", "temperature (0 = greedy)", 0, 2, 0.05, 1],  // temperature 1 is "off" too
    ["top_k", "top-k", 1, "V", 1, "V"], ["top_p", "top-p", 0.01, 1, 0.01, 1],
    ["min_p", "min-p", 0, 1, 0.01, 0], ["typical_p", "typical mass", 0.01, 1, 0.01, 1],
    ["epsilon", "epsilon", 0, 0.1, 0.001, 0], ["eta", "eta", 0, 0.1, 0.001, 0],
    ["repetition_penalty", "repetition penalty", 0.5, 2, 0.05, 1],
    ["frequency_penalty", "frequency penalty", 0, 2, 0.05, 0],
    ["presence_penalty", "presence penalty", 0, 2, 0.05, 0]];
  var LINE = 160;  // characters per Sample / Continue
  var DATASET = { truncation: "chars", step: "top" };  // what each chart draws (shakespeare_lm.site.live)

  function el(tag, attrs, parent, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function label(ch) { return { "\n": "\u23ce", " ": "\u2423" }[ch] || ch; }
  // the model (with its decoding), its charts (Vega-Lite specs, live/charts.js) and Vega to draw them
  var runtime = window.slm && window.slmVega ?
    Promise.all([window.slm.loadAsset("charts.js"), window.slmVega.ready]).then(function () { return window.slm.ready; }) :
    Promise.reject(new Error("slm_vega.js and slm_runtime.js must be loaded before slm_explorers.js: build the site with `make book`"));
  runtime.catch(function () {});  // reported by each explorer

  function frame(root) {
    var cfg = JSON.parse(root.querySelector("script[type='application/json']").textContent);
    root.textContent = "";
    var ui = { cfg: cfg, root: root, seed: cfg.seed };
    el("div", { class: "slm-title", style: "font-weight:bold" }, root, cfg.title);
    ui.context = el("textarea", { class: "slm-context", rows: 3, spellcheck: "false", "aria-label": "your context",
      style: "width:100%;font-family:monospace;font-size:13px" }, root);
    ui.context.value = cfg.context;
    ui.controls = el("div", { class: "slm-controls", style: "display:flex;flex-wrap:wrap;gap:.2em 1.2em;margin:.3em 0" }, root);
    var buttons = el("div", { style: "display:flex;gap:.6em;align-items:center;margin:.3em 0" }, root);
    ui.sample = el("button", { class: "slm-sample", type: "button", disabled: "" }, buttons, "Sample");
    ui.cont = el("button", { class: "slm-continue", type: "button", disabled: "" }, buttons, "Continue");
    ui.status = el("span", { class: "slm-status", style: "font-family:monospace;color:#555" }, buttons,
                   "loading the model into the page\u2026");
    ui.view = el("div", { class: "slm-view" }, root);
    ui.chartBox = el("div", { class: "slm-chart" }, ui.view);
    ui.output = el("pre", { class: "slm-output", style: "white-space:pre-wrap;min-height:2.5em;" +
      "background:#f7f7f7;padding:.4em;font-size:13px" }, root);
    return ui;
  }
  /* A range input for RULE_INPUTS' `spec`; "V" stands for the model's vocabulary size. */
  function slider(ui, spec, model) {
    var limit = function (v) { return v === "V" ? model.config.vocab_size : v; };
    var name = spec[0], off = limit(spec[5]);
    var wrap = el("label", { style: "display:flex;gap:.4em;align-items:center;font-size:13px" }, ui.controls);
    el("span", { style: "min-width:10em" }, wrap, spec[1]);
    var input = el("input", { type: "range", min: limit(spec[2]), max: limit(spec[3]), step: spec[4], value: off,
                              "data-name": name, "data-off": off, style: "width:9em" }, wrap);
    var out = el("output", { style: "font-family:monospace;min-width:4em" }, wrap);
    function show() { out.textContent = +input.value === off ? "off" : input.value; }
    input.addEventListener("input", show);
    show();
    return input;
  }
  /* The settings of generate that the inputs give (a rule at its "off" value is left out). */
  function settingsOf(inputs) {
    var s = {};
    Object.keys(inputs).forEach(function (name) {
      var input = inputs[name], v = +input.value;
      if (name === "temperature" || v !== +input.getAttribute("data-off")) s[name] = name === "top_k" ? Math.round(v) : v;
    });
    return s;
  }
  function busy(ui, on) { ui.sample.disabled = ui.cont.disabled = on; }
  function fail(ui, e) { ui.status.textContent = String(e.message || e); ui.status.style.color = "#b00"; busy(ui, false); }
  function ok(ui, text) { ui.status.textContent = text; ui.status.style.color = "#555"; }
  function showText(ui, context, added, extra) {
    ui.output.textContent = "";
    el("span", { style: "color:#888" }, ui.output, context.slice(-200));
    el("span", { class: "slm-new", style: "font-weight:bold;background:#e3f0ff" }, ui.output, added);
    if (extra) ui.output.appendChild(extra);
  }
  /* Draw `rows` in the explorer's chart (a Vega-Lite spec made in Python, shakespeare_lm.site.live)
     with its parameters set to `params`; the chart is embedded on first use. */
  function chart(ui, kind, rows, params) {
    var spec = window.SLM_ASSETS.charts[kind];
    if (!ui.chartView) ui.chartView = window.slmVega.embed(ui.chartBox, spec);
    return ui.chartView.then(function (view) {
      view.data(DATASET[kind], rows);
      Object.keys(params).forEach(function (k) { view.signal(k, params[k]); });
      return view.runAsync();
    });
  }

  // --- chapter 3: every rule on your context, and continuations under them ----------------
  /* The rows of the truncation chart (shakespeare_lm.site.explorer.distribution_chart) for the
     model's `logits` after the context whose ids are `history`, under the config `cfg`. */
  function distributionRows(m, logits, history, cfg) {
    var D = window.slm.decoding, raw = D.softmax(logits), shaped = D.shape(logits, history, cfg);
    var pf = D.distribution(shaped, cfg), rank = [];
    D.order(logits, true).forEach(function (id, r) { rank[id] = r + 1; });
    var bits = Math.abs(D.entropyBits(pf.map(Math.log)));
    return pf.map(function (p, i) {
      return { id: i, ch: label(m.chars[i]), r0: rank[i], raw_p: raw[i], pf: p, kept: p > 0, bits: bits };
    });
  }
  function truncation(ui, m) {
    var D = window.slm.decoding, inputs = {}, text = "", block = m.config.block_size;
    RULE_INPUTS.forEach(function (r) { inputs[r[0]] = slider(ui, r, m); });
    function redraw() {
      var context = ui.context.value + text, cfg;
      try { cfg = D.config(settingsOf(inputs)); } catch (e) { return fail(ui, e); }
      return window.slm.nextLogits(context).then(function (r) {
        var title = "next character after \u2026" + JSON.stringify(context.slice(-24)).slice(1, -1);
        return chart(ui, "truncation", distributionRows(m, r.logits, r.ids, cfg), { title: title }).then(function () {
          ui.root.setAttribute("data-state", JSON.stringify(cfg));
        });
      }).catch(function (e) { fail(ui, e); });
    }
    function write(more) {
      busy(ui, true);
      if (!more) text = "";
      var context = ui.context.value + text, seed = ui.seed++;
      ok(ui, "sampling\u2026");
      var s = Object.assign(settingsOf(inputs), { stop: "\n\n" });
      // as Python's explorer: the end of the context that leaves room for the new line
      return window.slm.sample(context.slice(-(block - LINE)), LINE, s, seed).then(function (r) {
        showText(ui, ui.context.value + text, r.text);
        text += r.text;
        ok(ui, (more ? "continued" : "sampled") + " " + r.text.length + " characters (seed " + seed + ", " + r.stopReason + ")");
        busy(ui, false);
        return redraw();
      }).catch(function (e) { fail(ui, e); });
    }
    ui.sample.onclick = function () { write(false); };
    ui.cont.onclick = function () { write(true); };
    ui.context.addEventListener("input", function () { text = ""; redraw(); });
    Object.keys(inputs).forEach(function (k) { inputs[k].addEventListener("change", redraw); });
    return redraw;  // run once mounted
  }

  // --- chapter 1: one character at a time, the KV cache filling -------------------------
  function drawCache(ui, m, stream) {
    var c = m.config, used = stream.ids.length, W = 900, cell = W / c.block_size;
    var svg = ui.cacheSvg || (ui.cacheSvg = document.createElementNS("http://www.w3.org/2000/svg", "svg"));
    svg.setAttribute("viewBox", "0 0 " + W + " " + (c.n_layer * 14 + 4));
    svg.setAttribute("width", "100%");
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    for (var l = 0; l < c.n_layer; l++) for (var j = 0; j < c.block_size; j++) {
      var r = document.createElementNS(svg.namespaceURI, "rect");
      r.setAttribute("x", j * cell); r.setAttribute("y", 2 + l * 14);
      r.setAttribute("width", Math.max(cell - 0.6, 0.5)); r.setAttribute("height", 12);
      r.setAttribute("fill", j < used - 1 ? "#1f77b4" : j === used - 1 ? "#ff7f0e" : "#eee");
      svg.appendChild(r);
    }
    var perSlot = 2 * c.n_layer * c.d_model * 4;
    ui.cache.textContent = "KV cache: " + used + " of " + c.block_size + " slots filled in each of " + c.n_layer +
      " layers (newest in orange); keys and values take " + perSlot + " bytes a slot, " +
      (used * perSlot / 1024).toFixed(1) + " KiB now";
    ui.cache.appendChild(svg);
  }
  function step(ui, m) {
    var D = window.slm.decoding, inputs = { temperature: slider(ui, RULE_INPUTS[0], m) }, state = null;
    var block = m.config.block_size;
    ui.cache = el("div", { class: "slm-cache", style: "font-family:monospace;font-size:12px" }, ui.view);
    function reset() { state = null; ui.output.textContent = ""; }
    function one(cfg, left) {
      if (!left) { busy(ui, false); return; }
      var context = state.ids.slice(D.windowStart(state.ids.length, block));  // generate's slide
      return state.stream.advanceTo(context).then(function (rows) {
        var logits = rows[rows.length - 1], raw = D.softmax(logits), shaped = D.shape(logits, context, cfg);
        var probs = D.distribution(shaped, cfg), id = D.choose(shaped, cfg, state.random);
        var top = D.order(raw, true).slice(0, 20);
        chart(ui, "step", top.map(function (i, rank) {
          return { rank: rank, ch: label(m.chars[i]), p: raw[i], drawn: i === id };
        }), { title: "next character: drew " + JSON.stringify(m.chars[id]) + " (p = " + probs[id].toFixed(3) +
                     "; the model's 20 most probable shown)" });
        var before = ui.context.value + state.text;
        state.ids.push(id);
        state.text += m.chars[id];
        showText(ui, before, m.chars[id]);
        drawCache(ui, m, state.stream);
        ok(ui, state.text.length + " characters generated; this step fed " + rows.length + " character(s) to the model");
        ui.root.setAttribute("data-state", String(state.text.length));
        return new Promise(function (r) { setTimeout(r, left > 1 ? 30 : 0); }).then(function () { return one(cfg, left - 1); });
      });
    }
    function advance(k) {
      busy(ui, true);
      try {
        var cfg = D.config(settingsOf(inputs));
        if (!state) {
          var ids = D.encode(m.chars, ui.context.value).slice(-block);
          if (!ids.length) throw new Error("the context is empty: type at least one character");
          state = { ids: ids, stream: new window.slm.Stream(m), text: "", random: D.generator(ui.seed++) };
        }
      } catch (e) { return fail(ui, e); }
      return Promise.resolve(one(cfg, k)).catch(function (e) { fail(ui, e); });
    }
    ui.sample.textContent = "Sample one";
    ui.cont.textContent = "Continue 40";
    ui.sample.onclick = function () { advance(1); };
    ui.cont.onclick = function () { advance(40); };
    ui.context.addEventListener("input", reset);
  }

  // --- chapter 6: speculative decoding with the draft model, round by round --------------
  function speculative(ui, m) {
    var inputs = { temperature: slider(ui, RULE_INPUTS[0], m) }, text = "", totals = null;
    var gamma = slider(ui, ["gamma", "gamma (proposals a round)", 1, 8, 1, null], m);
    gamma.value = 4;
    gamma.dispatchEvent(new Event("input"));
    ui.rounds = el("div", { class: "slm-rounds", style: "font-family:monospace;font-size:13px;line-height:1.9;" +
      "max-height:12em;overflow-y:auto" }, ui.view);
    function round(proposed, accepted, next) {
      var line = el("span", { style: "display:inline-block;margin:0 .5em .2em 0;border:1px solid #ddd" }, ui.rounds);
      for (var i = 0; i < proposed.length; i++) {
        var keep = i < accepted, gone = i > accepted;
        el("span", { class: keep ? "slm-accepted" : "slm-rejected", title: keep ? "kept" : gone ? "never checked" : "rejected",
          style: "padding:0 1px;margin-right:1px;background:" + (keep ? "#c8f0c8" : gone ? "#eee" : "#f6c6c6") +
                 (keep ? "" : ";text-decoration:line-through") }, line, label(proposed[i]));
      }
      el("span", { style: "padding:0 2px;background:#cfe0ff;font-weight:bold", title: "from the main model" }, line, label(next));
      ui.rounds.scrollTop = ui.rounds.scrollHeight;
    }
    function run(more) {
      busy(ui, true);
      if (!more || !totals) { text = ""; totals = { proposed: 0, accepted: 0 }; ui.rounds.textContent = ""; }
      var context = ui.context.value + text, seed = ui.seed++, g = +gamma.value, base = { p: totals.proposed, a: totals.accepted };
      ok(ui, "loading the draft and running rounds\u2026");
      return window.slm.speculative(context.slice(-m.config.block_size), LINE / 2, g, settingsOf(inputs), seed, function (r) {
        round(r.proposed, r.accepted, r.next);
        showText(ui, ui.context.value + text, r.text);
      }).then(function (r) {
        text += r.text;
        totals.proposed = base.p + r.proposed;
        totals.accepted = base.a + r.accepted;
        ok(ui, r.rounds + " rounds, " + (r.text.length / r.rounds).toFixed(2) + " characters per pass of the main model; " +
           "acceptance so far " + (100 * totals.accepted / Math.max(totals.proposed, 1)).toFixed(1) + "% (seed " + seed + ")");
        ui.root.setAttribute("data-state", String(text.length));
        busy(ui, false);
      }).catch(function (e) { fail(ui, e); });
    }
    ui.sample.onclick = function () { run(false); };
    ui.cont.onclick = function () { run(true); };
    ui.context.addEventListener("input", function () { text = ""; });
  }

  var KINDS = { truncation: truncation, step: step, speculative: speculative };
  function mount(root) {
    if (root.getAttribute("data-mounted")) return;
    if (!KINDS[root.getAttribute("data-kind")]) return;  // its script registers it later
    root.setAttribute("data-mounted", "1");
    var ui = frame(root);
    ui.root.slmUi = ui;
    runtime.then(function (slm) {
      return slm.load().then(function (m) {
        var onReady = KINDS[ui.cfg.kind](ui, m);
        busy(ui, false);
        ok(ui, "the model runs in this page (ONNX Runtime Web); type your own context");
        root.setAttribute("data-ready", "1");
        if (onReady) return onReady();
      });
    }).catch(function (e) { fail(ui, e); });
  }
  function mountAll() { document.querySelectorAll(".slm-live").forEach(mount); }
  /* An explorer of its own file (slm_beam.js, ...): `fn(ui, model)` sets up the controls of
     the frame `ui` (frame(), above) and returns an optional function to run once mounted. */
  function register(kind, fn) { KINDS[kind] = fn; mountAll(); }
  window.slmExplorers = { mountAll: mountAll, register: register,
                          util: { el: el, label: label, slider: slider, settingsOf: settingsOf, busy: busy,
                                  fail: fail, ok: ok, showText: showText, chart: chart, RULE_INPUTS: RULE_INPUTS } };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
  mountAll();
})();
