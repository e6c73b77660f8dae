/* The live explorers of the static site (shakespeare_lm.site.live): a text box for the reader's
   own context, Sample and Continue buttons, and the real model behind them (slm_runtime.js,
   loaded from the same folder). Every .slm-live element on the page is mounted once:

     truncation    the next-character distribution under every rule, and continuations
     step          generation one character at a time, the KV cache filling slot by slot
     speculative   the draft proposes, the main model keeps or rejects, acceptance so far */
(function () {
  "use strict";
  if (window.slmExplorers) { window.slmExplorers.mountAll(); return; }
  var me = document.currentScript.src, BASE = me.substring(0, me.lastIndexOf("/") + 1);
  var RULE_INPUTS = [  // name, label, min, max, step, value that switches the rule off
    ["temperature", "temperature (0 = greedy)", 0, 2, 0.05, 1],  // temperature 1 is "off" too
    ["top_k", "top-k", 1, 63, 1, 63], ["top_p", "top-p", 0.01, 1, 0.01, 1],
    ["min_p", "min-p", 0, 1, 0.01, 0], ["typical_p", "typical mass", 0.01, 1, 0.01, 1],
    ["epsilon", "epsilon", 0, 0.1, 0.001, 0], ["eta", "eta", 0, 0.1, 0.001, 0],
    ["repetition_penalty", "repetition penalty", 0.5, 2, 0.05, 1]];
  var LINE = 160;  // characters per Sample / Continue
  var DATASET = { truncation: "logits", step: "top" };  // what each chart draws (shakespeare_lm.site.live)

  function el(tag, attrs, parent, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function label(ch) { return { "\n": "\u23ce", " ": "\u2423" }[ch] || ch; }
  function loadScript(url) {
    return new Promise(function (resolve, reject) {
      var s = el("script", { src: url });
      s.onload = resolve;
      s.onerror = function () { reject(new Error("could not load " + url)); };
      document.head.appendChild(s);
    });
  }
  // the model, its charts (Vega-Lite specs, live/charts.js) and Vega to draw them
  var runtime = (window.slm ? Promise.resolve() : loadScript(BASE + "slm_runtime.js"))
    .then(function () { return window.slmVega ? null : loadScript(BASE + "slm_vega.js"); })
    .then(function () { return Promise.all([window.slm.loadScript("charts.js"), window.slmVega.ready]); })
    .then(function () { return window.slm.ready; });

  /* The frame every explorer shares: context box, controls, buttons, status, view, output. */
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
  function slider(ui, spec) {
    var name = spec[0], wrap = el("label", { style: "display:flex;gap:.4em;align-items:center;font-size:13px" }, ui.controls);
    el("span", { style: "min-width:10em" }, wrap, spec[1]);
    var input = el("input", { type: "range", min: spec[2], max: spec[3], step: spec[4], value: spec[5],
                              "data-name": name, style: "width:9em" }, wrap);
    var out = el("output", { style: "font-family:monospace;min-width:4em" }, wrap);
    function show() { out.textContent = +input.value === spec[5] ? "off" : input.value; }
    input.addEventListener("input", show);
    show();
    return input;
  }
  function settingsOf(inputs) {
    var s = {};
    RULE_INPUTS.forEach(function (r) {
      var input = inputs[r[0]];
      if (!input) return;
      var v = +input.value;
      if (r[0] === "temperature" || v !== r[5]) s[r[0]] = r[0] === "top_k" ? Math.round(v) : v;
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
  function chartDefaults(kind) {  // the parameters' values where each rule is off
    var out = {};
    (window.SLM_ASSETS.charts[kind].params || []).forEach(function (p) { out[p.name] = p.value; });
    return out;
  }

  // --- chapter 3: every rule on your context, and continuations under them ----------------
  function truncation(ui) {
    var inputs = {}, text = "";
    RULE_INPUTS.forEach(function (r) { inputs[r[0]] = slider(ui, r); });
    function redraw() {
      var context = ui.context.value + text, s;
      try { s = window.slm.checkSettings(settingsOf(inputs)); } catch (e) { return fail(ui, e); }
      return window.slm.load().then(function (m) {
        return window.slm.nextDistribution(context).then(function (probs) {
          var logits = probs.map(Math.log);
          var history = window.slm.tokenize(m, context).slice(-m.config.block_size);
          if (s.repetition_penalty !== null) logits = window.slm.repetitionPenalty(logits, history, s.repetition_penalty);
          var rows = logits.map(function (l, i) { return { ctx: 0, id: i, ch: label(m.chars[i]), logit: l }; });
          var params = chartDefaults("truncation");
          Object.keys(params).forEach(function (k) { if (s[k] !== null && s[k] !== undefined) params[k] = s[k]; });
          params.title = "next character after \u2026" + JSON.stringify(context.slice(-24)).slice(1, -1);
          return chart(ui, "truncation", rows, params).then(function () {
            ui.root.setAttribute("data-state", JSON.stringify(params));
          });
        });
      }).catch(function (e) { fail(ui, e); });
    }
    function write(more) {
      busy(ui, true);
      if (!more) text = "";
      var context = ui.context.value + text, seed = ui.seed++;
      ok(ui, "sampling\u2026");
      var s = Object.assign(settingsOf(inputs), { stop: "\n\n" });
      return window.slm.sample(context, LINE, s, seed).then(function (r) {
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
    return redraw;  // run once the model is ready
  }

  // --- chapter 1: one character at a time, the KV cache filling -------------------------
  function step(ui) {
    var inputs = { temperature: slider(ui, RULE_INPUTS[0]) }, state = null;
    ui.cache = el("div", { class: "slm-cache", style: "font-family:monospace;font-size:12px" }, ui.view);
    function reset() { state = null; ui.output.textContent = ""; }
    function drawCache(m, stream) {
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
    function advance(k) {
      busy(ui, true);
      var s;
      try { s = window.slm.checkSettings(settingsOf(inputs)); } catch (e) { return fail(ui, e); }
      return window.slm.load().then(function (m) {
        if (!state) {
          var ids = window.slm.tokenize(m, ui.context.value).slice(-m.config.block_size);
          if (!ids.length) throw new Error("the context is empty: type at least one character");
          state = { ids: ids, stream: new window.slm.Stream(m), text: "", random: window.slm.generator(ui.seed++) };
        }
        function one(left) {
          if (!left) { busy(ui, false); return; }
          if (state.ids.length >= m.config.block_size) state.ids = window.slm.windowOf(m, state.ids, 1);
          return state.stream.advanceTo(state.ids).then(function (rows) {
            var logits = rows[rows.length - 1], raw = window.slm.softmax(logits);
            var probs = window.slm.shaped(logits, state.ids, s), id = window.slm.draw(probs, state.random);
            var top = raw.map(function (p, i) { return i; }).sort(function (a, b) { return raw[b] - raw[a] || a - b; }).slice(0, 20);
            chart(ui, "step", top.map(function (i, rank) {
              return { rank: rank, ch: label(m.chars[i]), p: raw[i], drawn: i === id };
            }), { title: "next character: drew " + JSON.stringify(m.chars[id]) + " (p = " + probs[id].toFixed(3) +
                         "; the model's 20 most probable shown)" });
            var before = ui.context.value + state.text;
            state.ids.push(id);
            state.text += m.chars[id];
            showText(ui, before, m.chars[id]);
            drawCache(m, state.stream);
            ok(ui, state.text.length + " characters generated; this step fed " + rows.length + " character(s) to the model");
            ui.root.setAttribute("data-state", String(state.text.length));
            return new Promise(function (r) { setTimeout(r, left > 1 ? 30 : 0); }).then(function () { return one(left - 1); });
          });
        }
        return one(k);
      }).catch(function (e) { fail(ui, e); });
    }
    ui.sample.textContent = "Sample one";
    ui.cont.textContent = "Continue 40";
    ui.sample.onclick = function () { advance(1); };
    ui.cont.onclick = function () { advance(40); };
    ui.context.addEventListener("input", reset);
  }

  // --- chapter 6: speculative decoding with the draft model, round by round --------------
  function speculative(ui) {
    var inputs = { temperature: slider(ui, RULE_INPUTS[0]) }, text = "", totals = null;
    var gamma = slider(ui, ["gamma", "gamma (proposals a round)", 1, 8, 1, null]);
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
      return window.slm.speculative(context, LINE / 2, g, settingsOf(inputs), seed, function (r) {
        round(r.proposed, r.accepted, r.next);
        showText(ui, ui.context.value + text, r.text);
      }).then(function (r) {
        text += r.text;
        totals.proposed = base.p + r.proposed;
        totals.accepted = base.a + r.accepted;
        ok(ui, r.rounds + " rounds, " + (r.text.length / r.rounds).toFixed(2) + " characters per pass of the main model; " +
           "acceptance so far " + (100 * totals.accepted / totals.proposed).toFixed(1) + "% (seed " + seed + ")");
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
    root.setAttribute("data-mounted", "1");
    var ui = frame(root), onReady = KINDS[ui.cfg.kind](ui);
    runtime.then(function () {
      busy(ui, false);
      ok(ui, "the model runs in this page (ONNX Runtime Web); type your own context");
      root.setAttribute("data-ready", "1");
      if (onReady) return onReady();
    }).catch(function (e) { fail(ui, e); });
    ui.root.slmUi = ui;
  }
  function mountAll() { document.querySelectorAll(".slm-live").forEach(mount); }
  window.slmExplorers = { mountAll: mountAll };
  mountAll();
})();
