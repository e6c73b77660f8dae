/* The live explorers of the static site (shakespeare_lm.site.live): a text box for the reader's
   own context, Sample and Continue buttons, and the real model behind them (slm_runtime.js,
   whose decoding is decoding.js: the explorers decide nothing themselves). The page loads
   live/rules.js, slm_vega.js, slm_runtime.js and this file in that order (book/_ext/live_explorers.py).
   Every .slm-live element on the page is mounted once:

     truncation    the next-character distribution under every rule: the model's own p as an
                   outline, what the rules and penalties leave (renormalised) solid; Sample
                   writes `length` characters under them (a blank line ends it only if asked)
     step          generation one character at a time: the bars are the distribution the
                   character is drawn from (at the temperature), the outline the model's own;
                   the KV cache filling slot by slot
     speculative   the draft proposes, the target keeps or rejects; the acceptance shown
                   is the chapter's alpha, accepted over tested proposals

   Each has "Try this" presets (settings and a context, and what to look for), and a seed box:
   the same context, settings and seed give the same text. A failed action (an unknown
   character, a bad setting) clears what is on screen, so nothing stale stays beside the error.
   The controls' limits that depend on the model (top-k's maximum) come from its config.
   Every colour and the symbols of a space and a newline come from live/style.js
   (shakespeare_lm.site.style, which make book writes), loaded before this file.

   window.slmExplorers.util holds what every explorer's file (slm_beam.js, slm_builder.js,
   slm_race.js) draws and binds with: elements (el, svg), the inputs, the messages, the
   style. */
(function () {
  "use strict";
  if (window.slmExplorers) { window.slmExplorers.mountAll(); return; }
  /* name, label, min, max, step, value that switches the rule off ("V": the vocabulary's size),
     temperature first (its value is always shown): the registry's sliders, from rules.js
     (shakespeare_lm/site/browser_rules.py), which the page loads before this file */
  var RULE_INPUTS = window.SlmRules.controls.map(function (c) {
    return [c.name, c.label, c.min, c.max, c.step, c.off];
  });
  var LINE = 160;  // characters per Sample / Continue, until the reader sets another length
  var DATASET = { truncation: "chars", step: "top" };  // what each chart draws (shakespeare_lm.site.live)
  var BLANK_LINE = "\n\n";
  var STYLE = window.SlmStyle;  // shakespeare_lm.site.style: colours, symbols, fonts
  if (!STYLE) throw new Error("slm_explorers.js needs live/style.js (SlmStyle) loaded before it: build the site with make book");
  var NS = "http://www.w3.org/2000/svg";
  // the speculative explorer's colours (STYLE.round_colours): one meaning each, every one
  // named in its legend with these words
  var ROUND_WORDS = {
    accepted: "kept proposal", rejected: "rejected proposal", unchecked: "never checked (after a rejection)",
    replacement: "replacement, drawn from the residual r", bonus: "bonus, drawn from p (every proposal kept)" };

  // --- elements and words ------------------------------------------------------------------
  function filled(e, attrs, parent, text) {
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  /* An HTML element `tag` with `attrs`, appended to `parent` (if any), holding `text` (if any). */
  function el(tag, attrs, parent, text) { return filled(document.createElement(tag), attrs, parent, text); }
  /* The same for an SVG element. */
  function svg(tag, attrs, parent, text) { return filled(document.createElementNS(NS, tag), attrs, parent, text); }
  /* A character as the book shows it: a space and a newline as their symbols. */
  function label(ch) { return STYLE.visible[ch] || ch; }
  /* `text` on one line: each newline as its symbol. */
  function inline(text) { return text.replace(/\n/g, STYLE.newline); }
  /* The end of `text` for a title: newlines as the symbol the charts use. */
  function tail(text, n) { return "\u2026" + inline(text.slice(-n)); }  // as the kernel-free explorer's titles
  function sum(xs) { return xs.reduce(function (a, b) { return a + b; }, 0); }
  /* `x` to `digits` decimals with a typographic minus sign (svg.signed). */
  function signed(x, digits) { return (x < 0 ? "\u2212" : "") + Math.abs(x).toFixed(digits); }
  // the model (with its decoding), its charts (Vega-Lite specs, live/charts.js) and Vega to draw them
  var runtime = window.slm && window.slmVega ?
    window.slm.loadAsset("charts.js").then(function () { return window.slm; }) :  // Vega comes with the first chart
    Promise.reject(new Error("slm_vega.js and slm_runtime.js must be loaded before slm_explorers.js: build the site with `make book`"));
  runtime.catch(function () {});  // reported by each explorer

  var ROW = "display:flex;flex-wrap:wrap;gap:.2em 1.2em;align-items:center;margin:.3em 0";
  function frame(root) {
    var cfg = JSON.parse(root.querySelector("script[type='application/json']").textContent);
    root.textContent = "";
    var ui = { cfg: cfg, root: root, seed: cfg.seed };
    el("div", { class: "slm-title", style: "font-weight:bold" }, root, cfg.title);
    ui.context = el("textarea", { class: "slm-context", rows: 3, spellcheck: "false", "aria-label": "your context",
      style: "width:100%;font-family:monospace;font-size:13px" }, root);
    ui.context.value = cfg.context;
    ui.controls = el("div", { class: "slm-controls", style: ROW }, root);
    ui.options = el("div", { class: "slm-options", style: ROW + ";font-size:13px;margin:0" }, root);
    var buttons = el("div", { style: "display:flex;gap:.6em;align-items:center;margin:.3em 0" }, root);
    ui.sample = el("button", { class: "slm-sample", type: "button", disabled: "", style: "white-space:nowrap" },
                   buttons, "Sample");
    ui.cont = el("button", { class: "slm-continue", type: "button", disabled: "", style: "white-space:nowrap" },
                 buttons, "Continue");
    ui.status = el("span", { class: "slm-status", style: "font-family:monospace;color:" + STYLE.faint_ink }, buttons,
                   "getting the explorer ready\u2026");
    ui.view = el("div", { class: "slm-view" }, root);
    ui.chartBox = el("div", { class: "slm-chart" }, ui.view);
    ui.output = el("pre", { class: "slm-output", style: "white-space:pre-wrap;min-height:2.5em;" +
      "background:" + STYLE.text_box + ";padding:.4em;font-size:13px" }, root);
    return ui;
  }
  /* A range input for RULE_INPUTS' `spec`; "V" stands for the model's vocabulary size. Its
     readout says "off" where the rule does nothing; temperature always shows its value. */
  function slider(ui, spec, model) {
    var limit = function (v) { return v === "V" ? model.config.vocab_size : v; };
    var name = spec[0], off = limit(spec[5]);
    var input = field(ui.controls, spec[1], { type: "range", min: limit(spec[2]), max: limit(spec[3]), step: spec[4],
                                              value: off, "data-name": name, "data-off": off, "data-default": off,
                                              style: "width:9em" });
    input.previousSibling.style.minWidth = "10em";
    readout(input, "4em", function (v) { return +v === off && name !== "temperature" ? "off" : v; });
    return input;
  }
  /* gamma, the speculative rounds' proposals, as a slider that starts at `value`. */
  function gammaSlider(ui, m, value) {
    var gamma = slider(ui, ["gamma", "gamma (proposals a round)", 1, 8, 1, null], m);
    gamma.value = value;
    gamma.setAttribute("data-default", String(value));
    gamma.dispatchEvent(new Event("input"));
    return gamma;
  }
  /* A control of the controls' row in `parent`: the words `text`, then an <input> of `attrs`
     (`title`: what it does, shown on hover). */
  function field(parent, text, attrs, title) {
    var wrap = el("label", Object.assign({ style: "display:flex;gap:.4em;align-items:center;font-size:13px" },
                                         title ? { title: title } : {}), parent);
    el("span", {}, wrap, text);
    return el("input", attrs, wrap);
  }
  /* An <output> after `input` (`width` its least width) that shows format(value) as it moves. */
  function readout(input, width, format) {
    var out = el("output", { style: "font-family:monospace;min-width:" + width }, input.parentNode);
    function show() { out.textContent = format ? format(input.value) : input.value; }
    input.addEventListener("input", show);
    show();
    return out;
  }
  /* A box of the options row: a number (`value` its default), or a checkbox (`value` true/false). */
  function box(ui, name, text, value, attrs, title) {
    var wrap = el("label", { style: "display:flex;gap:.35em;align-items:center", title: title || "" }, ui.options);
    var check = typeof value === "boolean";
    var input = el("input", Object.assign({ type: check ? "checkbox" : "number", "data-name": name,
                                            "data-default": String(value), style: check ? "" : "width:5.5em" }, attrs || {}));
    if (check) { input.checked = value; wrap.appendChild(input); el("span", {}, wrap, text); }
    else { input.value = value; el("span", {}, wrap, text); wrap.appendChild(input); }
    return input;
  }
  /* The seed box: the same context, settings and seed give the same text. */
  function seedBox(ui) {
    return box(ui, "seed", "seed", ui.cfg.seed, { min: 0, step: 1 },
               "the seed of the random draws: the same seed gives the same text; Continue uses the next seeds");
  }
  function lengthBox(ui, text, value, max) {
    return box(ui, "length", text, value, { min: 1, max: max, step: 1 });
  }
  function stopBox(ui) {
    return box(ui, "stop", "stop at a blank line", false, {},
               "end the text at the first blank line (a stop sequence of \\n\\n); unticked, it runs to its length");
  }
  /* The integer in a number box, checked as Python checks a count. */
  function count(input, low) {
    var v = input.value.trim() === "" ? NaN : +input.value;
    window.slm.decoding.checkCount(input.getAttribute("data-name"), v, low);
    return v;
  }
  /* The settings of generate that the inputs give (a rule at its "off" value is left out). */
  function settingsOf(inputs) {
    var s = {};
    Object.keys(inputs).forEach(function (name) {
      var input = inputs[name], v = +input.value;
      if (name === "temperature" || v !== +input.getAttribute("data-off")) s[name] = name === "top_k" ? Math.round(v) : v;
    });
    if (s.xtc_threshold !== undefined && s.xtc_probability === undefined) delete s.xtc_threshold;  // XTC is off
    return s;
  }
  /* The settings of a Sample press from its boxes: generate's (a blank line ends the text if
     `stop` is ticked), `n` characters, the `first` seed; throws the reader's error. */
  function sampleSettings(inputs, length, seed, stop) {
    var s = settingsOf(inputs), n = count(length, 1), first = count(seed, 0);
    if (stop.checked) s.stop = BLANK_LINE;
    return { s: s, n: n, first: first };
  }
  function busy(ui, on) { ui.sample.disabled = ui.cont.disabled = on; }
  /* An action failed: say why, and clear what is on screen (it belongs to an earlier action). */
  function fail(ui, e) {
    ui.status.textContent = String(e.message || e);
    ui.status.style.color = STYLE.error_ink;
    ui.failed = true;
    ui.output.textContent = "";
    ui.view.style.display = "none";
    busy(ui, false);
  }
  /* A message while an action runs: what is on screen stays as it is. */
  function progress(ui, text) { ui.status.textContent = text; ui.status.style.color = STYLE.faint_ink; }
  /* An action succeeded: its message, and the view shown again. */
  function ok(ui, text) { progress(ui, text); ui.failed = false; ui.view.style.display = ""; }
  /* The end of `context` (the last `keep` characters, 200 if not given) in the secondary ink. */
  function showContext(ui, context, keep) {
    ui.output.textContent = "";
    el("span", { style: "color:" + STYLE.faint_ink }, ui.output, context.slice(-(keep || 200)));
  }
  /* Text that an action just wrote, after what is in the output. */
  function showNew(ui, added) {
    el("span", { class: "slm-new", style: "font-weight:bold;background:" + STYLE.new_text }, ui.output, added);
  }
  function showText(ui, context, added) {
    showContext(ui, context);
    showNew(ui, added);
  }
  /* Draw `rows` in the explorer's chart (a Vega-Lite spec made in Python, shakespeare_lm.site.live)
     with its parameters set to `params`; the chart is embedded on first use. Its dataset is
     DATASET[kind], or the spec's only one; the first draw has the rows already (Vega warns of an
     infinite extent on a scale over an empty dataset). */
  function chart(ui, kind, rows, params) {
    var spec = window.SLM_ASSETS.charts[kind], name = DATASET[kind] || Object.keys(spec.datasets)[0];
    var first = {};
    first[name] = rows;  // drawn with its data from the start: no scale over an empty dataset
    if (!ui.chartView) ui.chartView = window.slmVega.embed(ui.chartBox, spec, first);
    return ui.chartView.then(function (view) {
      view.data(name, rows);
      Object.keys(params).forEach(function (k) { view.signal(k, params[k]); });
      ui.view.style.display = "";  // hidden after a failure; drawn with the new data
      return view.runAsync();
    });
  }
  /* "Try this": a button per preset {label, sets (what it sets, in words), look (what to look
     for), context, settings: {data-name: value}}. A click puts every control of the explorer
     back to its default, then sets the preset's context and settings, shows its "Look for"
     line and calls run(preset). */
  function presets(ui, list, run) {
    var row = el("div", { class: "slm-presets", style: ROW + ";font-size:13px" });
    ui.root.insertBefore(row, ui.options.nextSibling);
    el("span", { style: "color:" + STYLE.faint_ink }, row, "Try this:");
    var hint = el("div", { class: "slm-hint", style: "font-size:13px;color:" + STYLE.ink + ";margin:0 0 .3em" });
    ui.root.insertBefore(hint, row.nextSibling);
    list.forEach(function (p) {
      var b = el("button", { type: "button", title: p.sets, style: "font-size:12px" }, row, p.label);
      b.onclick = function () {
        if (ui.sample.disabled) return;  // an action is running
        if (p.context !== undefined) ui.context.value = p.context;
        ui.root.querySelectorAll("input[data-name]").forEach(function (input) {
          var name = input.getAttribute("data-name"), v = name in (p.settings || {}) ?
            p.settings[name] : input.getAttribute("data-default");
          if (input.type === "checkbox") input.checked = v === true || v === "true";
          else input.value = v;
          input.dispatchEvent(new Event("input"));  // readouts; no change event: run() redraws
        });
        hint.textContent = "";
        el("b", {}, hint, p.label + ". ");
        hint.appendChild(document.createTextNode("Look for: " + p.look));
        progress(ui, "set: " + p.sets);
        run(p);
      };
    });
    return row;
  }

  // --- chapter 3: every rule on your context, and continuations under them ----------------
  /* The rows of the truncation chart (shakespeare_lm.site.explorer.distribution_chart) for the
     model's `logits` after the context whose ids are `history`, under the config `cfg`:
     raw_p is the model's own distribution (softmax of its logits, before any rule or
     penalty), pf what the penalties and rules leave, bits the entropy of pf. */
  function distributionRows(m, logits, history, cfg) {
    var D = window.slm.decoding, raw = D.softmax(logits), shaped = D.shape(logits, history, cfg);
    var pf = D.distribution(shaped, cfg), rank = [];
    D.order(logits, true).forEach(function (id, r) { rank[id] = r + 1; });
    var bits = Math.abs(D.entropyBits(pf.map(Math.log)));
    return pf.map(function (p, i) {
      return { id: i, ch: label(m.chars[i]), r0: rank[i], raw_p: raw[i], pf: p, kept: p > 0, bits: bits };
    });
  }
  var TRUNCATION_PRESETS = [
    { label: "middle of a word", context: "KATHARINA:\nMoved! in good time: let him that moved you hith",
      settings: { top_p: 0.9 }, sets: "the context ends inside 'hither'; top-p 0.9",
      look: "one letter (e, to spell hither) holds almost all the probability, so top-p keeps it alone. " +
            "Then press Sample." },
    { label: "start of a word", context: "KATHARINA:\nMoved! in good time: let him that moved you ",
      settings: { top_p: 0.9 }, sets: "the context ends with a space; top-p 0.9",
      look: "many letters can begin a word: the same top-p keeps many more characters than inside one." },
    { label: "repetition penalty", context: "KATHARINA:\nMoved! in good time: let him that moved you hither\nRemove you ",
      settings: { repetition_penalty: 1.5 }, sets: "repetition penalty 1.5",
      look: "most characters already in the context fall below their outlines and every other one rises; " +
            "the outlines, the model's own p, are the same as with the penalty at 1." }];
  function truncation(ui, m) {
    var D = window.slm.decoding, inputs = {}, text = "", block = m.config.block_size, draws = 0, continued = 0;
    RULE_INPUTS.forEach(function (r) { inputs[r[0]] = slider(ui, r, m); });
    var length = lengthBox(ui, "characters per Sample", LINE, 2000), stop = stopBox(ui), seed = seedBox(ui);
    function redraw() {
      var context = ui.context.value + text, cfg, serial = ++draws;
      try { cfg = D.config(settingsOf(inputs)); } catch (e) { return Promise.resolve(fail(ui, e)); }
      return window.slm.nextLogits(context).then(function (r) {
        if (serial !== draws) return;  // a later redraw is on its way
        var title = "next character after " + tail(context, 24);
        return chart(ui, "truncation", distributionRows(m, r.logits, r.ids, cfg), { title: title }).then(function () {
          if (ui.failed) ok(ui, "the distribution after your context");
          ui.root.setAttribute("data-state", String(serial));
        });
      }).catch(function (e) { fail(ui, e); });
    }
    function write(more) {
      busy(ui, true);
      var a;
      try {
        a = sampleSettings(inputs, length, seed, stop);
        a.s.context_overflow = "slide";  // a text longer than the window goes on, as generate's slide
        D.config(Object.assign({}, a.s, { context_overflow: undefined }));
      } catch (e) { return Promise.resolve(fail(ui, e)); }
      if (!more) { text = ""; continued = 0; } else continued++;
      var context = ui.context.value + text, used = a.first + continued;
      progress(ui, "sampling\u2026");
      return window.slm.sample(context.slice(-block), a.n, a.s, used).then(function (r) {
        showText(ui, ui.context.value + text, r.text);
        text += r.text;
        ok(ui, (more ? "continued" : "sampled") + " " + r.text.length + " characters (seed " + used + ", " +
           { max_tokens: "the length asked for", stop_sequence: "a blank line" }[r.stopReason] + ")");
        busy(ui, false);
        return redraw();
      }).catch(function (e) { fail(ui, e); });
    }
    ui.sample.onclick = function () { write(false); };
    ui.cont.onclick = function () { write(true); };
    ui.cont.title = "go on from the text so far, with the next seed";
    ui.context.addEventListener("input", function () { text = ""; redraw(); });
    Object.keys(inputs).forEach(function (k) { inputs[k].addEventListener("change", redraw); });
    presets(ui, TRUNCATION_PRESETS, function () { text = ""; ui.output.textContent = ""; return redraw(); });
    return redraw;  // run once mounted
  }

  // --- chapter 1: one character at a time, the KV cache filling -------------------------
  /* The KV cache as `used` slots of the context window filled, in each layer. */
  function drawCache(ui, m, used) {
    var c = m.config, W = 900, cell = W / c.block_size;
    var box = ui.cacheSvg || (ui.cacheSvg = svg("svg", {}));
    box.setAttribute("viewBox", "0 0 " + W + " " + (c.n_layer * 14 + 4));
    box.setAttribute("width", "100%");
    while (box.firstChild) box.removeChild(box.firstChild);
    var fill = [STYLE.colours.blue, STYLE.colours.orange, STYLE.empty];  // filled before, this step, empty
    for (var l = 0; l < c.n_layer; l++) for (var j = 0; j < c.block_size; j++) {
      svg("rect", { x: j * cell, y: 2 + l * 14, width: Math.max(cell - 0.6, 0.5), height: 12,
                    fill: fill[j < used - 1 ? 0 : j === used - 1 ? 1 : 2] }, box);
    }
    // keys and values of every layer, 4-byte floats (the graphs' float32 cache); KB = 1,000 bytes
    var perSlot = 2 * c.n_layer * c.d_model * 4;
    ui.cache.textContent = "KV cache: " + used + " of " + c.block_size + " slots filled in each of " + c.n_layer +
      " layers (blue: filled before, orange: written this step, grey: empty). Keys and values in 4-byte floats take " +
      perSlot.toLocaleString("en-US") + " bytes a slot: " + (used * perSlot / 1000).toFixed(1) + " KB now.";
    ui.cache.appendChild(box);
  }
  /* The step explorer's step of `run` (its generation, model and seed) that chose `chosen`
     from the model's `logits` after `context`: the distribution it was drawn from and the
     model's own, the text, the cache. */
  function drawStep(ui, m, run, chosen, logits, context) {
    var D = window.slm.decoding, raw = D.softmax(logits), probs = chosen.probs, id = chosen.id, g = run.g;
    var order = D.order(raw, true), top = order.slice(0, 20), rank = order.indexOf(id);
    if (rank >= 20) top.push(id);  // the drawn character is always shown
    var T = g.cfg.temperature, shown = JSON.stringify(label(chosen.char));
    var title = (T === 0 ? "took " + shown + ", the most probable (T = 0, greedy): probability 1.000" :
                 "drew " + shown + " with probability " + probs[id].toFixed(3) + " (T = " + T + ")") +
                (rank >= 20 ? "; the model ranks it " + (rank + 1) + "th" : "");
    var fed = run.model.fed;
    return chart(ui, "step", top.map(function (i) {
      return { rank: order.indexOf(i), ch: label(m.chars[i]), p: probs[i], raw_p: raw[i], drawn: i === id };
    }), { title: title }).then(function () {
      showText(ui, ui.context.value + g.text.slice(0, -1), chosen.char);
      drawCache(ui, m, context.length);
      ok(ui, g.text.length + " characters generated (seed " + run.seed + "); this step fed " + fed +
         " character(s) to the model");
      ui.root.setAttribute("data-state", String(g.text.length));
      return new Promise(function (r) { setTimeout(r, 30); });
    });
  }
  var STEP_PRESETS = [
    { label: "greedy", context: "PETRUCHIO:\n", settings: { temperature: 0, length: 40 },
      sets: "temperature 0, then Continue 40",
      look: "each step takes the tallest outline, the bar drawn is 1, and the same text comes every time." },
    { label: "T = 0.5", context: "PETRUCHIO:\n", settings: { temperature: 0.5, length: 40 },
      sets: "temperature 0.5, then Continue 40",
      look: "the bars of the likeliest characters rise above their outlines and the rest shrink: " +
            "the draws keep to the top few." },
    { label: "T = 1.5", context: "PETRUCHIO:\n", settings: { temperature: 1.5, length: 40 },
      sets: "temperature 1.5, then Continue 40",
      look: "the bars flatten below the outlines at the top: unlikely characters get drawn, and the words fall apart." }];
  function step(ui, m) {
    var D = window.slm.decoding, inputs = { temperature: slider(ui, RULE_INPUTS[0], m) }, state = null;
    var block = m.config.block_size;
    var length = lengthBox(ui, "characters per Continue", 40, block), seed = seedBox(ui);
    ui.cache = el("div", { class: "slm-cache", style: "font-family:monospace;font-size:12px" }, ui.view);
    function reset() {  // a new context or seed: a new run, and nothing of the old one on screen
      state = null;
      ui.output.textContent = "";
      ui.view.style.display = "none";
      ui.root.removeAttribute("data-state");
    }
    /* k more characters (null: the length box's), through decoding.js's Generation and its
       loop: a new one after a reset, else the same one under the current temperature. */
    function advance(k) {
      busy(ui, true);
      var n, run;
      try {
        var settings = settingsOf(inputs);
        n = k === null ? count(length, 1) : k;
        if (!state) {
          var ids = D.encode(m.chars, ui.context.value).slice(-block), s = count(seed, 0);
          if (!ids.length) throw new Error("the context is empty: type at least one character");
          state = { g: new D.Generation(m.chars, block, window.slm.decode(m, ids), Number.MAX_SAFE_INTEGER,
                                        Object.assign({ seed: s }, settings), "slide"),
                    model: window.slm.modelFunction(m), seed: s };  // generate's slide past the window
        } else state.g.reconfigure(Object.assign({ seed: state.seed }, settings));
        run = state;
      } catch (e) { reset(); return Promise.resolve(fail(ui, e)); }
      return Promise.resolve(D.run(run.g, run.model, n, function (chosen, logits, context) {
        if (state !== run) return Promise.reject(new Error("stale"));  // a new context or seed
        return drawStep(ui, m, run, chosen, logits, context);
      })).then(function () { busy(ui, false); }, function (e) {
        if (e && e.message === "stale") return busy(ui, false);
        reset();
        fail(ui, e);
      });
    }
    ui.sample.textContent = "Sample one";
    ui.cont.textContent = "Continue";
    ui.sample.onclick = function () { advance(1); };
    ui.cont.onclick = function () { advance(null); };
    ui.context.addEventListener("input", reset);
    seed.addEventListener("input", reset);
    presets(ui, STEP_PRESETS, function () { reset(); return advance(null); });
  }

  // --- chapter 6: speculative decoding with the draft model, round by round --------------
  var SPECULATIVE_PRESETS = [
    { label: "a speech", context: "KATHARINA:\nMoved! in good time: let him that moved you ",
      settings: { gamma: 4, length: 120 }, sets: "gamma 4, temperature 1, 120 characters",
      look: "most proposals are kept (green): the draft knows the plays' words and spelling." },
    { label: "greedy", context: "KATHARINA:\nMoved! in good time: let him that moved you ",
      settings: { gamma: 4, length: 120, temperature: 0 }, sets: "the same, at temperature 0",
      look: "a proposal is kept only where the draft's most probable character is the target's: " +
            "every seed gives the same rounds, and here fewer are kept than at temperature 1." },
    { label: "gamma 8", context: "KATHARINA:\nMoved! in good time: let him that moved you ",
      settings: { gamma: 8, length: 120 }, sets: "gamma 8, temperature 1",
      look: "more grey proposals, never checked after a rejection; characters per pass never exceeds 1/(1 \u2212 \u03b1)." }];
  function speculative(ui, m) {
    var st = { inputs: { temperature: slider(ui, RULE_INPUTS[0], m) }, text: "", totals: null };
    st.gamma = gammaSlider(ui, m, 4);
    st.length = lengthBox(ui, "characters per Sample", LINE / 2, 2000);
    st.stop = stopBox(ui);
    st.seed = seedBox(ui);
    roundsView(ui);
    ui.sample.onclick = function () { runRounds(ui, m, st, false); };
    ui.cont.onclick = function () { runRounds(ui, m, st, true); };
    ui.cont.title = "go on from the text so far, with the next seed; the counts add up";
    ui.context.addEventListener("input", function () { st.text = ""; st.totals = null; });
    presets(ui, SPECULATIVE_PRESETS, function () { return runRounds(ui, m, st, false); });
  }
  /* The legend of the rounds' colours, and the box the rounds are drawn in. */
  function roundsView(ui) {
    var legend = el("div", { class: "slm-legend", style: "display:flex;flex-wrap:wrap;gap:.3em .8em;font-size:12px;" +
                             "margin:.2em 0" }, ui.view);
    Object.keys(ROUND_WORDS).forEach(function (what) {
      el("span", { "data-what": what, style: chip(what) }, legend, ROUND_WORDS[what]);
    });
    ui.rounds = el("div", { class: "slm-rounds", style: "font-family:monospace;font-size:13px;line-height:1.9;" +
      "max-height:12em;overflow-y:auto" }, ui.view);
  }
  function chip(what) {
    return "padding:0 2px;background:" + STYLE.round_colours[what] +
           ({ rejected: ";text-decoration:line-through", unchecked: ";color:" + STYLE.faint_ink,
              replacement: ";font-weight:bold", bonus: ";font-weight:bold" }[what] || "");
  }
  /* One round: its proposals, kept, rejected or never checked, then the target's character. */
  function drawRound(ui, r) {
    var line = el("span", { style: "display:inline-block;margin:0 .5em .2em 0;border:1px solid " + STYLE.separator },
                  ui.rounds);
    for (var i = 0; i < r.proposed.length; i++) {
      var what = i < r.accepted ? "accepted" : i === r.accepted ? "rejected" : "unchecked";
      el("span", { class: "slm-" + what, "data-what": what, title: ROUND_WORDS[what],
                   style: chip(what) + ";margin-right:1px" }, line, label(r.proposed[i]));
    }
    var last = r.bonus ? "bonus" : "replacement";
    el("span", { class: "slm-" + last, "data-what": last, title: r.bonus ? "from the target: every proposal kept" :
      "from the target, in place of the rejected proposal", style: chip(last) }, line, label(r.next));
    ui.rounds.scrollTop = ui.rounds.scrollHeight;
  }
  /* Sample (or, `more`, Continue): rounds until the length, drawn as they come. */
  function runRounds(ui, m, st, more) {
    busy(ui, true);
    var a;
    try {
      a = sampleSettings(st.inputs, st.length, st.seed, st.stop);
      window.slm.decoding.config(a.s);
    } catch (e) { return Promise.resolve(fail(ui, e)); }
    if (!more || !st.totals) {
      st.text = "";
      st.totals = { rounds: 0, drafted: 0, proposed: 0, accepted: 0, runs: 0 };
      ui.rounds.textContent = "";
    }
    var totals = st.totals, context = ui.context.value + st.text, used = a.first + totals.runs;
    progress(ui, "loading the draft and running rounds\u2026");
    ui.view.style.display = "";
    return window.slm.speculative(context.slice(-m.config.block_size), a.n, +st.gamma.value, a.s, used, function (r) {
      drawRound(ui, r);
      showText(ui, ui.context.value + st.text, r.text);
    }).then(function (r) {
      st.text += r.text;
      ["rounds", "drafted", "proposed", "accepted"].forEach(function (k) { totals[k] += r[k]; });
      totals.runs++;
      ok(ui, roundsReport(totals, st.text.length, a.first, used));
      ui.root.setAttribute("data-stats", JSON.stringify(totals));
      ui.root.setAttribute("data-state", String(st.text.length));
      busy(ui, false);
    }).catch(function (e) { fail(ui, e); });
  }
  /* What the rounds so far did: characters per pass, its bound 1/(1 - alpha), the acceptance. */
  function roundsReport(totals, chars, first, used) {
    var a = totals.accepted / totals.proposed, perPass = chars / totals.rounds;
    var bound = totals.proposed > totals.accepted ? (1 / (1 - a)).toFixed(2) : "unbounded (every tested proposal kept)";
    return totals.rounds + " passes of the target, " + chars + " characters: " + perPass.toFixed(2) +
           " characters per pass, at most 1/(1 \u2212 \u03b1) = " + bound + "; acceptance \u03b1 = " +
           (totals.proposed ? (100 * a).toFixed(1) + "%" : "none tested") + " (" + totals.accepted + " kept of " +
           totals.proposed + " proposals tested, " + (totals.drafted - totals.proposed) + " never checked; seed " +
           (totals.runs > 1 ? first + "\u2013" + used : used) + ")";
  }

  var KINDS = { truncation: truncation, step: step, speculative: speculative };
  function mount(root) {
    if (root.getAttribute("data-mounted")) return;
    if (!KINDS[root.getAttribute("data-kind")]) return;  // its script registers it later
    root.setAttribute("data-mounted", "1");
    var ui = frame(root);
    ui.root.slmUi = ui;
    runtime.then(function (slm) {
      // the model loads when the reader reaches the explorer (slm_runtime.js)
      return slm.loadWhenReached(root, function (text) { progress(ui, text); }).then(function (m) {
        var onReady = KINDS[ui.cfg.kind](ui, m);
        busy(ui, false);
        ok(ui, "the target model runs in this page (ONNX Runtime Web), " + slm.readyText() + "; type your own context");
        root.setAttribute("data-ready", "1");
        if (onReady) return onReady();
      });
    }).catch(function (e) { fail(ui, e); });
  }
  function mountAll() { document.querySelectorAll(".slm-live").forEach(mount); }
  /* An explorer of its own file (slm_beam.js, ...): `fn(ui, model)` sets up the controls of
     the frame `ui` (frame(), above) and returns an optional function to run once mounted.
     util.fail clears the output and hides the view (an error leaves nothing stale on
     screen); util.ok shows the view again. */
  function register(kind, fn) { KINDS[kind] = fn; mountAll(); }
  window.slmExplorers = { mountAll: mountAll, register: register,
                          util: { el: el, svg: svg, label: label, inline: inline, tail: tail, sum: sum,
                                  signed: signed, style: STYLE, field: field, readout: readout, box: box,
                                  slider: slider, gammaSlider: gammaSlider, settingsOf: settingsOf,
                                  RULE_INPUTS: RULE_INPUTS, seedBox: seedBox, lengthBox: lengthBox,
                                  stopBox: stopBox, count: count, busy: busy, fail: fail, ok: ok,
                                  progress: progress, showContext: showContext, showNew: showNew,
                                  showText: showText, chart: chart, presets: presets } };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
  mountAll();
})();
