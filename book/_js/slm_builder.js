/* The live token builder (chapter 1, shakespeare_lm.site.live: live.explorer("builder")): the
   reader writes a continuation of their own context one character at a time, on the real
   model in the page (slm_runtime.js).

     the bars       the model's 20 most probable next characters, p(v | context) at T = 1;
                    a click on a bar appends that character
     Greedy         appends the most probable character (as generate at temperature 0)
     Sample         draws the next character at temperature T; the draw at step t uses the
                    t-th number of the seeded generator, so Sample pressed at every step
                    writes the seeded sample's text
     rewind         a click on a character of the text goes back to just before it; Back
                    removes the last one
     the scores     the log-probability of each character of the text under the untruncated
                    model (T = 1), as Python's teacher-forced scoring computes it
                    (shakespeare_lm.decoding.scoring.score_continuations), beside greedy's
                    and the seeded sample's over the same number of characters

   A text longer than the context window goes on in the windows of
   shakespeare_lm.decoding.context_window, as generate(context_overflow="slide") does and
   as char_logprobs scores it. The root's data-state holds what is shown, as JSON. */
(function () {
  "use strict";
  var X = window.slmExplorers;
  if (!X || window.slmBuilderRegistered) return;  // slm_explorers.js reports a missing runtime
  window.slmBuilderRegistered = true;
  var U = X.util, el = U.el;
  // shakespeare_lm.site.style: PALETTE (Okabe and Ito) and the inks
  var C = { p: "#0072B2", tempered: "#E69F00", yours: "#D55E00", greedy: "#009E73", sample: "#CC79A7",
            ink: "#222222", faint: "#595959", grid: "#e6e6e6", pale: "#fbe6da" };
  // the running-score chart's lines differ in dash as well as colour: yours solid and wide
  var DASH = { greedy: { svg: "8 5", css: "dashed" }, sample: { svg: "1 5", css: "dotted" } };
  var FONT = "Helvetica Neue, Helvetica, Arial, sans-serif", MONO = "SFMono-Regular, Menlo, Consolas, monospace";
  var TOP = 20, MAX_CHARS = 400, W = 680;
  var NS = "http://www.w3.org/2000/svg";
  var PROMPT = "KATHARINA:\nMoved! in good time: ";  // chapter 1's prompt
  var PRESETS = [
    { label: "greedy, then sample", context: PROMPT, settings: { count: 40 }, steps: ["greedy"],
      sets: "40 characters per press, then Greedy",
      look: "your row equals greedy's, character for character. Press Start over, then Sample: now it equals " +
            "the sample's. Which scores higher per character, and which reads more like a play?" },
    { label: "one unlikely character", context: PROMPT, settings: { count: 40 }, steps: ["last bar", "greedy"],
      sets: "the last bar (a character under 1%), then Greedy with 40 per press",
      look: "a drop of several nats at t = 1. Do the greedy characters after it keep pace with greedy's own line?" },
    { label: "Sample at T = 0.5", context: PROMPT, settings: { temperature: 0.5, count: 40 }, steps: ["sample"],
      sets: "T = 0.5, then Sample with 40 per press",
      look: "the sample's score per character moves toward greedy's. Where does its text still differ from greedy's?" }];

  function show(ch) { return { " ": "\u2423", "\n": "\u21b5" }[ch] || ch; }  // as chapter 1 prints them
  function inline(text) { return Array.from(text).map(function (ch) { return ch === "\n" ? "\u21b5" : ch; }).join(""); }
  function nats(x, digits) { return (x < 0 ? "\u2212" : "") + Math.abs(x).toFixed(digits === undefined ? 3 : digits); }
  function sum(xs) { return xs.reduce(function (a, b) { return a + b; }, 0); }
  function svg(tag, attrs, parent, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function canvas(box, height) {
    box.textContent = "";
    return svg("svg", { viewBox: "0 0 " + W + " " + height, width: "100%", role: "img",
                        style: "max-width:" + W + "px;display:block;font-family:" + FONT }, box);
  }
  /* A y axis from 0 down or up to `lo`..`hi`: nice ticks, their labels and grid lines. */
  function ticks(lo, hi, count) {
    var span = hi - lo, raw = span / count, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 2.5, 5, 10].map(function (f) { return f * mag; }).filter(function (s) { return s >= raw; })[0];
    var out = [];
    for (var v = Math.ceil(lo / step - 1e-9) * step; v <= hi + 1e-9; v += step) out.push(Math.abs(v) < 1e-12 ? 0 : v);
    return { values: out, step: step };
  }
  function tickText(v, step) {
    var d = 0;
    while (d < 4 && Math.abs(step * Math.pow(10, d) - Math.round(step * Math.pow(10, d))) > 1e-6) d++;
    return (v < 0 ? "\u2212" : "") + Math.abs(v).toFixed(d);
  }

  function builder(ui, m) {
    var D = window.slm.decoding, block = m.config.block_size;
    var st = null, queue = Promise.resolve(), refs = {};
    ui.root.style.maxWidth = "720px";

    // --- controls: temperature and seed of Sample, characters per press -------------------
    function control(text, attrs, title) {
      var wrap = el("label", { style: "display:flex;gap:.4em;align-items:center;font-size:13px", title: title }, ui.controls);
      el("span", {}, wrap, text);
      return el("input", attrs, wrap);
    }
    var temp = control("Sample's temperature T", { type: "range", min: 0, max: 2, step: 0.05, value: 1,
                       class: "slm-builder-temperature", "data-name": "temperature", "data-default": 1, style: "width:8em" },
                       "the temperature Sample draws at (0 = the most probable character)");
    var tempOut = el("output", { style: "font-family:monospace;min-width:2.5em" }, temp.parentNode);
    var seedBox = control("seed", { type: "number", min: 0, step: 1, value: ui.cfg.seed, class: "slm-builder-seed",
                          "data-name": "seed", "data-default": ui.cfg.seed, style: "width:5em" }, "Sample's draw at step t uses the t-th number of this seed's generator");
    var perPress = control("characters per press", { type: "number", min: 1, max: 50, step: 1, value: 1,
                           class: "slm-builder-count", "data-name": "count", "data-default": 1, style: "width:4em" }, "how many characters Greedy and Sample add");
    function showTemp() { tempOut.textContent = (+temp.value).toFixed(2); }
    showTemp();

    // --- buttons: Greedy, Sample, Back, Start over -----------------------------------------
    var row = ui.sample.parentNode;
    ui.cont.textContent = "Greedy";
    ui.cont.title = "append the most probable next character";
    ui.sample.textContent = "Sample";
    ui.sample.title = "draw the next character at temperature T with the seed";
    row.insertBefore(ui.cont, ui.sample);
    var back = el("button", { type: "button", class: "slm-builder-back", title: "remove the last character" });
    back.textContent = "Back";
    var restart = el("button", { type: "button", class: "slm-builder-restart", title: "remove every added character" });
    restart.textContent = "Start over";
    row.insertBefore(back, ui.status);
    row.insertBefore(restart, ui.status);
    var buttons = [ui.cont, ui.sample, back, restart];
    buttons.forEach(function (b) { b.style.flex = "none"; b.style.whiteSpace = "nowrap"; });

    // --- the view: your text, the next-character bars, the scores ---------------------------
    ui.view.insertBefore(ui.output, ui.chartBox);
    var hint = el("div", { style: "font-size:12px;color:" + C.faint + ";margin-top:.4em" });
    ui.view.insertBefore(hint, ui.output);
    ui.output.style.cursor = "default";
    ui.output.style.lineHeight = "1.5";
    var legendP = el("div", { class: "slm-builder-legend", style: "font-size:12px;display:flex;flex-wrap:wrap;" +
                              "gap:.2em 1.4em;margin:.1em 0 .6em 0" }, ui.view);
    var scoreTitle = el("div", { style: "font-size:13px;font-weight:bold;margin-top:.4em" }, ui.view);
    var lineBox = el("div", { class: "slm-builder-running" }, ui.view);
    var table = el("table", { class: "slm-builder-scores", style: "border-collapse:collapse;font-size:13px;" +
                              "margin:.3em 0;width:100%" }, ui.view);

    function setBusy(on) {
      buttons.forEach(function (b) { b.disabled = on; });
      ui.root.setAttribute("data-busy", on ? "1" : "0");
    }
    /* Run `fn` after the actions before it; an error clears what is shown and says why. */
    var pending = 0;
    function act(fn) {
      pending++;
      setBusy(true);
      queue = queue.then(fn).catch(function (e) {
        clear(e);
        U.fail(ui, e);
      }).then(function () { if (!--pending) setBusy(false); });
      return queue;
    }
    function clear(error) {
      st = null;
      [ui.output, ui.chartBox, legendP, scoreTitle, lineBox, table].forEach(function (e) { e.textContent = ""; });
      hint.textContent = "";
      ui.root.setAttribute("data-state", JSON.stringify({ error: String(error.message || error), text: "", logprobs: [] }));
    }

    function settings() {
      var seed = seedBox.value.trim() === "" ? NaN : +seedBox.value, T = +temp.value;
      if (!Number.isInteger(seed) || seed < 0) {
        throw new Error("seed=" + JSON.stringify(seedBox.value) + " is invalid: type a whole number >= 0");
      }
      var count = +perPress.value;
      if (!Number.isInteger(count) || count < 1 || count > 50) {
        throw new Error("characters per press must be a whole number from 1 to 50");
      }
      return { T: T, seed: seed, count: count, cfg: D.config({ temperature: T, seed: seed }) };
    }

    /* A fresh build from the context in the box (its last block_size characters): a
       generation (decoding.js's Generation, sliding past the window as generate does) that
       the presses run and the reader's clicks add to or rewind. */
    function start() {
      var text = ui.context.value, ids = D.encode(m.chars, text);
      if (!ids.length) throw new Error("the context is empty: type at least one character");
      var trimmed = ids.length > block, prompt = window.slm.decode(m, ids.slice(-block));
      st = { prompt: prompt, trimmed: trimmed, model: window.slm.modelFunction(m),
             g: new D.Generation(m.chars, block, prompt, MAX_CHARS, { temperature: 0 }, "slide") };
      return update();
    }
    /* The model's logits for the next character (its context: the windows of generate's slide). */
    function advance() {
      var ctx = st.g.window();
      return st.model([ctx]).then(function (rows) {
        st.logits = Array.from(rows[0]);
        st.history = ctx;
        st.logp = D.logSoftmax(st.logits);
      });
    }
    /* Greedy's and the seeded sample's texts from the same prompt, at least n characters. */
    function reference(name, n, s) {
      var key = name === "greedy" ? st.prompt : st.prompt + "\u0000" + s.T + "\u0000" + s.seed;
      var r = refs[name];
      if (!n) return Promise.resolve({ ids: [], logprobs: [] });  // nothing to compare yet
      if (r && r.key === key && r.ids.length >= n) return Promise.resolve(r);
      var length = Math.min(MAX_CHARS, Math.max(n, 40, r && r.key === key ? 2 * r.ids.length : 0));
      var T = name === "greedy" ? 0 : s.T;
      return window.slm.sample(st.prompt, length, { temperature: T, context_overflow: "slide" }, s.seed)
        .then(function (g) {
          refs[name] = { key: key, text: g.text, ids: g.ids, logprobs: g.logprobs };
          return refs[name];
        });
    }
    function update() {
      var s = settings(), n = st.g.ids.length;
      return advance().then(function () {
        return Promise.all([reference("greedy", n, s), reference("sample", n, s)]);
      }).then(function (r) { render(s, r[0], r[1]); });
    }

    /* Append `id`, the reader's choice (its log-probability from the logits after the text so far). */
    function append(id) {
      st.g.push(st.logits, id);
      return advance();
    }
    /* Greedy's or Sample's next `count` characters (the action of a press), by the
       generation's own loop; Sample's draw at step t uses the t-th number of its seed. */
    function generateMore(how) {
      var s = settings(), g = st.g;
      if (how === "greedy") g.reconfigure({ temperature: 0 });
      else {
        g.reconfigure({ temperature: s.T, seed: s.seed });
        g.reseed(s.seed, g.ids.length);
      }
      return Promise.resolve(D.run(g, st.model, s.count)).then(update);
    }
    function add(id) { return st.g.ids.length >= MAX_CHARS ? update() : append(id).then(update); }
    function press(how) {
      return act(function () {
        return (st ? Promise.resolve() : start()).then(function () { return generateMore(how); });
      });
    }
    function pick(id) { return act(function () { return st ? add(id) : start(); }); }
    function rewind(length) {
      return act(function () {
        if (!st) return start();
        st.g.rewind(length);
        return update();
      });
    }

    // --- drawing ----------------------------------------------------------------------------
    function render(s, greedy, sample) {
      var n = st.g.ids.length;
      drawText();
      drawBars(s);
      var lines = [
        { name: "yours", colour: C.yours, label: "your text", ids: st.g.ids, logprobs: st.g.logprobs },
        { name: "greedy", colour: C.greedy, label: "greedy (T = 0)", ids: greedy.ids.slice(0, n),
          logprobs: greedy.logprobs.slice(0, n) },
        { name: "sample", colour: C.sample, label: "sample (T = " + s.T.toFixed(2) + ", seed " + s.seed + ")",
          ids: sample.ids.slice(0, n), logprobs: sample.logprobs.slice(0, n) }];
      lines.forEach(function (l) {
        l.text = window.slm.decode(m, l.ids);
        l.total = sum(l.logprobs);
        l.mean = n ? l.total / n : null;
      });
      drawScores(lines, n);
      var state = { prompt: st.prompt, text: lines[0].text, logprobs: st.g.logprobs, total: lines[0].total,
                    mean: lines[0].mean, temperature: s.T, seed: s.seed, error: null };
      ["greedy", "sample"].forEach(function (k, j) {
        var l = lines[j + 1];
        state[k] = { text: l.text, logprobs: l.logprobs, total: l.total, mean: l.mean };
      });
      ui.root.setAttribute("data-state", JSON.stringify(state));
      var last = n ? " Last: " + JSON.stringify(m.chars[st.g.ids[n - 1]]) + ", log p = " + nats(st.g.logprobs[n - 1]) + " nats." : "";
      U.ok(ui, n + " character" + (n === 1 ? "" : "s") + " added" + (n >= MAX_CHARS ? " (the most this builder takes)." : ".") + last +
           (st.trimmed ? " (The prompt is the last " + block + " characters of your context.)" : ""));
    }
    function drawText() {
      ui.output.textContent = "";
      var n = st.g.ids.length;
      hint.textContent = n ? "Your text so far, after your context (grey). Click a character to go back to just before it."
                           : "Your context (grey). Click a bar below, or press Greedy or Sample, to add a character.";
      el("span", { style: "color:#777" }, ui.output, (st.prompt.length > 240 ? "\u2026" : "") + st.prompt.slice(-240));
      st.g.ids.forEach(function (id, t) {
        var ch = m.chars[id];
        var span = el("span", { class: "slm-builder-char", "data-t": t, role: "button", tabindex: 0,
          title: "character " + (t + 1) + ": " + JSON.stringify(ch) + ", log p = " + nats(st.g.logprobs[t]) +
                 " nats. Click to go back to just before it.",
          style: "background:" + C.pale + ";border-bottom:2px solid " + C.yours + ";cursor:pointer;font-weight:bold" },
          ui.output, ch === "\n" ? "\u21b5\n" : ch);
        span.onclick = function () { rewind(t); };
        span.onkeydown = function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); rewind(t); } };
      });
      el("span", { style: "color:" + C.yours + ";font-weight:bold" }, ui.output, "\u2588");  // where the next one goes
    }
    function drawBars(s) {
      var p = st.logp.map(Math.exp), top = D.order(st.logits, true).slice(0, TOP);
      var tempered = s.T > 0 && s.T !== 1 ? D.softmax(D.shape(st.logits, st.history, s.cfg)) : null;
      var H = 268, left = 58, right = 8, y0 = 222, y1 = 56, slot = (W - left - right) / TOP;
      var hi = Math.max.apply(null, top.map(function (i) { return Math.max(p[i], tempered ? tempered[i] : 0); }));
      var axis = ticks(0, hi, 4), ymax = axis.values[axis.values.length - 1];
      if (ymax < hi) { ymax += axis.step; axis.values.push(ymax); }
      function y(v) { return y0 - (y0 - y1) * v / ymax; }
      var g = canvas(ui.chartBox, H);
      g.setAttribute("aria-label", "the 20 most probable next characters and their probabilities");
      var tail = inline(st.prompt + window.slm.decode(m, st.g.ids)).slice(-24);
      svg("text", { x: 0, y: 17, "font-size": 15, "font-weight": "bold", fill: C.ink },
          g, "Next character after \u201c\u2026" + tail + "\u201d: click a bar to choose it");
      svg("text", { x: 0, y: 36, "font-size": 13, fill: C.faint }, g,
          "the model's " + TOP + " most probable of " + m.chars.length + " characters (\u2423 a space, \u21b5 a newline)");
      axis.values.forEach(function (v) {
        svg("line", { x1: left, x2: W - right, y1: y(v), y2: y(v), stroke: C.grid }, g);
        svg("text", { x: left - 6, y: y(v) + 4, "font-size": 13, "text-anchor": "end", fill: C.ink }, g, tickText(v, axis.step));
      });
      svg("text", { transform: "translate(14," + (y0 + y1) / 2 + ") rotate(-90)", "font-size": 14, "text-anchor": "middle",
                    fill: C.ink }, g, "probability");
      top.forEach(function (id, r) {
        var x = left + r * slot, ch = m.chars[id];
        svg("rect", { x: x + slot * 0.15, y: y(p[id]), width: slot * 0.7, height: y0 - y(p[id]), fill: C.p }, g);
        if (tempered) {
          svg("rect", { x: x + slot * 0.1, y: y(tempered[id]), width: slot * 0.8, height: Math.max(y0 - y(tempered[id]), 0),
                        fill: "none", stroke: C.tempered, "stroke-width": 2 }, g);
        }
        var v = p[id], top_ = Math.min(y(v), tempered ? y(tempered[id]) : y0);
        svg("text", { x: x + slot / 2, y: top_ - 4, "font-size": 13, "text-anchor": "middle", fill: C.faint }, g,
            v >= 0.995 ? "1" : v >= 0.01 ? v.toFixed(2).slice(1) : "<.01");
        svg("text", { x: x + slot / 2, y: y0 + 21, "font-size": 16, "text-anchor": "middle", fill: C.ink,
                      "font-family": MONO }, g, show(ch));
        var hit = svg("rect", { x: x, y: y1 - 8, width: slot, height: y0 - y1 + 34, fill: "transparent",
                                class: "slm-builder-bar", "data-rank": r, "data-id": id, "data-char": ch,
                                role: "button", tabindex: 0, style: "cursor:pointer" }, g);
        svg("title", {}, hit, JSON.stringify(ch) + ": p = " + v.toFixed(4) + ", log p = " + nats(st.logp[id], 4) +
            " nats" + (tempered ? "; Sample draws it with probability " + tempered[id].toFixed(4) : "") + ". Click to choose it.");
        hit.addEventListener("click", function () { pick(id); });
        hit.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); pick(id); } });
      });
      svg("line", { x1: left, x2: W - right, y1: y0, y2: y0, stroke: C.ink }, g);
      svg("text", { x: left, y: H - 6, "font-size": 13, fill: C.faint }, g,
          "bar labels: p(v | context); the greedy choice is the first bar");
      legendP.textContent = "";
      swatch(legendP, C.p, "solid", "p(v | context): the model's probability (T = 1); choosing v adds log p(v | context) to your score");
      if (tempered) swatch(legendP, C.tempered, "outline", "what Sample draws from at T = " + s.T.toFixed(2));
    }
    function swatch(parent, colour, kind, text, wide, dash) {
      var item = el("span", { style: "display:inline-flex;align-items:center;gap:.4em" }, parent);
      var style = kind === "outline" ? "border:2px solid " + colour + ";width:10px;height:10px"
                : kind === "line" ? "border-top:" + (wide ? 5 : 3) + "px " + (dash || "solid") + " " + colour + ";width:22px;height:0"
                : "background:" + colour + ";width:14px;height:14px";
      el("span", { style: "display:inline-block;flex:none;" + style }, item);
      el("span", {}, item, text);
      return item;
    }
    function drawScores(lines, n) {
      table.textContent = "";
      lineBox.textContent = "";
      scoreTitle.textContent = "Your score beside greedy's and a sample's, over the same " +
        (n ? n + " character" + (n === 1 ? "" : "s") : "characters");
      if (!n) {
        el("div", { style: "font-size:13px;color:" + C.faint }, lineBox,
           "Add a character: its log-probability, and greedy's and the sample's over as many characters, appear here.");
        return;
      }
      drawRunning(lines, n);
      var head = el("tr", {}, table);
      ["", "text (\u21b5 a newline)", "\u2113 (nats)", "per character (nats)"].forEach(function (h, j) {
        el("th", { style: "text-align:" + (j > 1 ? "right" : "left") + ";padding:.2em .5em;border-bottom:1px solid #bbb;" +
                          "font-weight:normal;color:" + C.faint + ";white-space:nowrap" }, head, h);
      });
      lines.forEach(function (l) {
        var tr = el("tr", { class: "slm-builder-row", "data-line": l.name }, table);
        swatch(el("td", { style: "padding:.2em .5em;white-space:nowrap;vertical-align:top" }, tr), l.colour, "line", l.label, l.name === "yours",
               DASH[l.name] && DASH[l.name].css);
        el("td", { style: "padding:.2em .5em;font-family:monospace;white-space:pre-wrap;overflow-wrap:anywhere;" +
                          "vertical-align:top" }, tr, inline(l.text));
        el("td", { class: "slm-builder-total", style: "padding:.2em .5em;text-align:right;font-family:monospace;" +
                   "vertical-align:top" }, tr, nats(l.total));
        el("td", { class: "slm-builder-mean", style: "padding:.2em .5em;text-align:right;font-family:monospace;" +
                   "vertical-align:top" }, tr, nats(l.mean));
      });
    }
    /* The running log-probability: l after t characters, for the three texts. */
    function drawRunning(lines, n) {
      var H = 206, left = 58, right = 12, y0 = 164, y1 = 12;
      var runs = lines.map(function (l) {
        var acc = 0;
        return [0].concat(l.logprobs.map(function (v) { acc += v; return acc; }));
      });
      var lo = Math.min.apply(null, runs.map(function (r) { return Math.min.apply(null, r); }));
      var axis = ticks(Math.min(lo, -0.5), 0, 4), ymin = axis.values[0];
      if (ymin > lo) { ymin -= axis.step; axis.values.unshift(ymin); }
      function x(t) { return left + (W - left - right) * t / n; }
      function y(v) { return y1 + (y0 - y1) * v / ymin; }
      var g = canvas(lineBox, H);
      g.setAttribute("aria-label", "the running log-probability of your text, greedy's and the sample's");
      axis.values.forEach(function (v) {
        svg("line", { x1: left, x2: W - right, y1: y(v), y2: y(v), stroke: C.grid }, g);
        svg("text", { x: left - 6, y: y(v) + 4, "font-size": 13, "text-anchor": "end", fill: C.ink }, g, tickText(v, axis.step));
      });
      var xt = ticks(0, n, Math.min(n, 8));
      xt.values.filter(function (t) { return Number.isInteger(t) || xt.step >= 1; }).forEach(function (t) {
        svg("line", { x1: x(t), x2: x(t), y1: y0, y2: y0 + 4, stroke: C.ink }, g);
        svg("text", { x: x(t), y: y0 + 18, "font-size": 13, "text-anchor": "middle", fill: C.ink }, g, String(Math.round(t)));
      });
      svg("line", { x1: left, x2: W - right, y1: y0, y2: y0, stroke: C.ink }, g);
      svg("text", { x: (left + W - right) / 2, y: H - 4, "font-size": 14, "text-anchor": "middle", fill: C.ink }, g,
          "characters added, t");
      svg("text", { transform: "translate(14," + (y0 + y1) / 2 + ") rotate(-90)", "font-size": 14, "text-anchor": "middle",
                    fill: C.ink }, g, "\u2113 so far (nats)");
      // yours first and wide, so that a line that follows it shows inside it
      [0, 1, 2].forEach(function (j) {
        var pts = runs[j].map(function (v, t) { return x(t).toFixed(1) + "," + y(v).toFixed(1); }).join(" ");
        var line = svg("polyline", { points: pts, fill: "none", stroke: lines[j].colour, "stroke-width": j === 0 ? 5 : 2.5,
                                     "stroke-linejoin": "round", "stroke-linecap": "round", class: "slm-builder-line",
                                     "data-line": lines[j].name }, g);
        if (DASH[lines[j].name]) line.setAttribute("stroke-dasharray", DASH[lines[j].name].svg);
        if (n <= 60) runs[j].forEach(function (v, t) {
          if (t) svg("circle", { cx: x(t), cy: y(v), r: j === 0 ? 4 : 2.2, fill: lines[j].colour }, g);
        });
      });
    }

    // --- events -------------------------------------------------------------------------------
    ui.cont.onclick = function () { press("greedy"); };
    ui.sample.onclick = function () { press("sample"); };
    back.onclick = function () { if (st) rewind(Math.max(0, st.g.ids.length - 1)); else act(start); };
    restart.onclick = function () { rewind(0); };
    var typed = 0;  // a context typed while an earlier one loads: only the latest is run
    ui.context.addEventListener("input", function () {
      var mine = ++typed;
      act(function () { if (mine === typed) return start(); });
    });
    temp.addEventListener("input", showTemp);
    [temp, seedBox].forEach(function (input) {
      input.addEventListener("change", function () { act(function () { return st ? update() : start(); }); });
    });
    // "Try this" (slm_explorers.js's presets): every control to its default, then the preset
    if (U.presets) U.presets(ui, PRESETS, function (p) {
      return act(function () {
        return p.steps.reduce(function (done, step) {
          return done.then(function () {
            return step === "last bar" ? add(D.order(st.logits, true)[TOP - 1]) : generateMore(step);
          });
        }, start());
      });
    });
    setBusy(true);
    return function () { return act(start); };
  }

  X.register("builder", builder);
})();
