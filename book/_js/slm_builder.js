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
   as char_logprobs scores it. The root's data-state holds what is shown, as JSON.

   One object `b` holds a builder: its frame (ui), model (m), controls and boxes, the build
   on screen (b.st) and the queue of the reader's actions; the functions below bind its
   controls, run its actions and draw it. */
(function () {
  "use strict";
  if (!window.slmExplorers) return;  // slm_explorers.js reports a missing runtime
  var U = window.slmExplorers.util, el = U.el, svg = U.svg, STYLE = U.style;
  var show = U.label, inline = U.inline, sum = U.sum;
  var P = STYLE.colours;  // shakespeare_lm.site.style: PALETTE (Okabe and Ito) and the inks
  var C = { p: P.blue, tempered: P.orange, yours: P.vermillion, greedy: P.green, sample: P.purple,
            ink: STYLE.ink, faint: STYLE.faint_ink, grid: STYLE.grid, chosen: STYLE.chosen };
  // the running-score chart's lines differ in dash as well as colour: yours solid and wide
  var DASH = { greedy: { svg: "8 5", css: "dashed" }, sample: { svg: "1 5", css: "dotted" } };
  var TOP = 20, MAX_CHARS = 400, W = 680;
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

  function nats(x, digits) { return U.signed(x, digits === undefined ? 3 : digits); }
  /* The width to draw the charts at: the column's own, at most W. A chart is drawn at its
     size on the screen (not a W-wide viewBox scaled down), so its text keeps its size on a
     phone; where the column is not laid out (hidden), W until it is (watchWidth). */
  function room(box) { return Math.min(W, box.clientWidth || W); }
  /* An SVG of `width` by `height` px at the end of `box`, named `label`. `role`: "group" where
     its bars are buttons (a screen reader does not enter an "img"), else "img". */
  function canvas(box, width, height, role, label) {
    return svg("svg", { viewBox: "0 0 " + width + " " + height, width: width, height: height, role: role,
                        "aria-label": label, style: "display:block;font-family:" + STYLE.font }, box);
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
  /* A y axis from x = `left` to `end`: its grid lines and tick labels (at y(v)), its title. */
  function yAxis(g, axis, y, left, end, midY, title) {
    axis.values.forEach(function (v) {
      svg("line", { x1: left, x2: end, y1: y(v), y2: y(v), stroke: C.grid }, g);
      svg("text", { x: left - 6, y: y(v) + 4, "font-size": 13, "text-anchor": "end", fill: C.ink }, g, tickText(v, axis.step));
    });
    svg("text", { transform: "translate(14," + midY + ") rotate(-90)", "font-size": 14, "text-anchor": "middle",
                  fill: C.ink }, g, title);
  }
  /* Enter or space on a focused element does what a click does. */
  function onActivate(e, fn) {
    e.addEventListener("click", fn);
    e.addEventListener("keydown", function (k) { if (k.key === "Enter" || k.key === " ") { k.preventDefault(); fn(); } });
  }

  // --- controls: temperature and seed of Sample, characters per press -------------------
  function controls(ui) {
    var c = {};
    c.temp = U.field(ui.controls, "Sample's temperature T", { type: "range", min: 0, max: 2, step: 0.05, value: 1,
                     class: "slm-builder-temperature", "data-name": "temperature", "data-default": 1, style: "width:8em" },
                     "the temperature Sample draws at (0 = the most probable character)");
    U.readout(c.temp, "2.5em", function (v) { return (+v).toFixed(2); });
    c.seed = U.field(ui.controls, "seed", { type: "number", min: 0, step: 1, value: ui.cfg.seed, class: "slm-builder-seed",
                     "data-name": "seed", "data-default": ui.cfg.seed, style: "width:5em" },
                     "Sample's draw at step t uses the t-th number of this seed's generator");
    c.perPress = U.field(ui.controls, "characters per press", { type: "number", min: 1, max: 50, step: 1, value: 1,
                         class: "slm-builder-count", "data-name": "count", "data-default": 1, style: "width:4em" },
                         "how many characters Greedy and Sample add");
    return c;
  }
  /* The buttons: Greedy, Sample, Back, Start over. */
  function buttons(ui) {
    var row = ui.sample.parentNode;
    ui.cont.textContent = "Greedy";
    ui.cont.title = "append the most probable next character";
    ui.sample.textContent = "Sample";
    ui.sample.title = "draw the next character at temperature T with the seed";
    row.insertBefore(ui.cont, ui.sample);
    var back = el("button", { type: "button", class: "slm-builder-back", title: "remove the last character" }, null, "Back");
    var restart = el("button", { type: "button", class: "slm-builder-restart", title: "remove every added character" },
                     null, "Start over");
    row.insertBefore(back, ui.status);
    row.insertBefore(restart, ui.status);
    row.style.flexWrap = "wrap";  // on a phone the status goes under the four buttons, not in a sliver beside them
    var all = [ui.cont, ui.sample, back, restart];
    all.forEach(function (e) { e.style.flex = "none"; e.style.whiteSpace = "nowrap"; });
    return { back: back, restart: restart, all: all };
  }
  /* The view: your text, the next-character bars and their legend, the scores. */
  function view(ui) {
    ui.view.insertBefore(ui.output, ui.chartBox);
    var v = { hint: el("div", { style: "font-size:12px;color:" + C.faint + ";margin-top:.4em" }) };
    ui.view.insertBefore(v.hint, ui.output);
    ui.output.style.cursor = "default";
    ui.output.style.lineHeight = "1.5";
    v.legend = el("div", { class: "slm-builder-legend", style: "font-size:12px;display:flex;flex-wrap:wrap;" +
                           "gap:.2em 1.4em;margin:.1em 0 .6em 0" }, ui.view);
    v.scoreTitle = el("div", { style: "font-size:13px;font-weight:bold;margin-top:.4em" }, ui.view);
    v.lineBox = el("div", { class: "slm-builder-running" }, ui.view);
    v.table = el("table", { class: "slm-builder-scores", style: "border-collapse:collapse;font-size:13px;" +
                            "margin:.3em 0;width:100%" }, ui.view);
    return v;
  }
  function bind(b) {
    var ui = b.ui, c = b.c;
    ui.cont.onclick = function () { press(b, "greedy"); };
    ui.sample.onclick = function () { press(b, "sample"); };
    b.buttons.back.onclick = function () { if (b.st) rewind(b, Math.max(0, b.st.g.ids.length - 1)); else act(b, start); };
    b.buttons.restart.onclick = function () { rewind(b, 0); };
    ui.context.addEventListener("input", function () {
      var mine = ++b.typed;  // a context typed while an earlier one loads: only the latest is run
      act(b, function () { if (mine === b.typed) return start(b); });
    });
    [c.temp, c.seed].forEach(function (input) {
      input.addEventListener("change", function () { act(b, function () { return b.st ? update(b) : start(b); }); });
    });
    // "Try this" (slm_explorers.js's presets): every control to its default, then the preset
    U.presets(ui, PRESETS, function (p) {
      return act(b, function () {
        return p.steps.reduce(function (done, step) {
          return done.then(function () {
            return step === "last bar" ? add(b, window.slm.decoding.order(b.st.logits, true)[TOP - 1]) : generateMore(b, step);
          });
        }, start(b));
      });
    });
  }

  // --- actions ------------------------------------------------------------------------------
  function setBusy(b, on) {
    b.buttons.all.forEach(function (e) { e.disabled = on; });
    b.ui.root.setAttribute("data-busy", on ? "1" : "0");
  }
  /* Run `fn(b)` after the actions before it; an error clears what is shown and says why. */
  function act(b, fn) {
    b.pending++;
    setBusy(b, true);
    b.queue = b.queue.then(function () { return fn(b); }).catch(function (e) {
      clear(b, e);
      U.fail(b.ui, e);
    }).then(function () { if (!--b.pending) setBusy(b, false); });
    return b.queue;
  }
  function clear(b, error) {
    var v = b.v;
    b.st = b.drawn = null;
    [b.ui.output, b.ui.chartBox, v.legend, v.scoreTitle, v.lineBox, v.table].forEach(function (e) { e.textContent = ""; });
    v.hint.textContent = "";
    b.ui.root.setAttribute("data-state", JSON.stringify({ error: String(error.message || error), text: "", logprobs: [] }));
  }
  /* The controls' values, checked: Sample's temperature and seed, characters per press. */
  function settings(b) {
    var c = b.c, seed = c.seed.value.trim() === "" ? NaN : +c.seed.value, T = +c.temp.value;
    if (!Number.isInteger(seed) || seed < 0) {
      throw new Error("seed=" + JSON.stringify(c.seed.value) + " is invalid: type a whole number >= 0");
    }
    var count = +c.perPress.value;
    if (!Number.isInteger(count) || count < 1 || count > 50) {
      throw new Error("characters per press must be a whole number from 1 to 50");
    }
    return { T: T, seed: seed, count: count, cfg: window.slm.decoding.config({ temperature: T, seed: seed }) };
  }
  /* A fresh build from the context in the box (its last block_size characters): a
     generation (decoding.js's Generation, sliding past the window as generate does) that
     the presses run and the reader's clicks add to or rewind. */
  function start(b) {
    var D = window.slm.decoding, m = b.m, block = m.config.block_size, ids = D.encode(m.chars, b.ui.context.value);
    if (!ids.length) throw new Error("the context is empty: type at least one character");
    var prompt = window.slm.decode(m, ids.slice(-block));
    b.st = { prompt: prompt, trimmed: ids.length > block, model: window.slm.modelFunction(m),
             g: new D.Generation(m.chars, block, prompt, MAX_CHARS, { temperature: 0 }, "slide") };
    return update(b);
  }
  /* The model's logits for the next character (its context: the windows of generate's slide). */
  function advance(st) {
    var ctx = st.g.window();
    return st.model([ctx]).then(function (rows) {
      st.logits = Array.from(rows[0]);
      st.history = ctx;
      st.logp = window.slm.decoding.logSoftmax(st.logits);
    });
  }
  /* Greedy's and the seeded sample's texts from the same prompt, at least n characters. */
  function reference(b, name, n, s) {
    var st = b.st, key = name === "greedy" ? st.prompt : st.prompt + "\u0000" + s.T + "\u0000" + s.seed;
    var r = b.refs[name];
    if (!n) return Promise.resolve({ ids: [], logprobs: [] });  // nothing to compare yet
    if (r && r.key === key && r.ids.length >= n) return Promise.resolve(r);
    var length = Math.min(MAX_CHARS, Math.max(n, 40, r && r.key === key ? 2 * r.ids.length : 0));
    var T = name === "greedy" ? 0 : s.T;
    return window.slm.sample(st.prompt, length, { temperature: T, context_overflow: "slide" }, s.seed)
      .then(function (g) {
        b.refs[name] = { key: key, text: g.text, ids: g.ids, logprobs: g.logprobs };
        return b.refs[name];
      });
  }
  function update(b) {
    var s = settings(b), n = b.st.g.ids.length;
    return advance(b.st).then(function () {
      return Promise.all([reference(b, "greedy", n, s), reference(b, "sample", n, s)]);
    }).then(function (r) { render(b, s, r[0], r[1]); });
  }
  /* Greedy's or Sample's next `count` characters (the action of a press), by the
     generation's own loop; Sample's draw at step t uses the t-th number of its seed. */
  function generateMore(b, how) {
    var s = settings(b), g = b.st.g;
    if (how === "greedy") g.reconfigure({ temperature: 0 });
    else {
      g.reconfigure({ temperature: s.T, seed: s.seed });
      g.reseed(s.seed, g.ids.length);
    }
    return Promise.resolve(window.slm.decoding.run(g, b.st.model, s.count)).then(function () { return update(b); });
  }
  /* Append `id`, the reader's choice (its log-probability from the logits after the text so far). */
  function add(b, id) {
    var st = b.st;
    if (st.g.ids.length >= MAX_CHARS) return update(b);
    st.g.push(st.logits, id);
    return advance(st).then(function () { return update(b); });
  }
  function press(b, how) {
    return act(b, function () {
      return (b.st ? Promise.resolve() : start(b)).then(function () { return generateMore(b, how); });
    });
  }
  function pick(b, id) { return act(b, function () { return b.st ? add(b, id) : start(b); }); }
  function rewind(b, length) {
    return act(b, function () {
      if (!b.st) return start(b);
      b.st.g.rewind(length);
      return update(b);
    });
  }

  // --- drawing ----------------------------------------------------------------------------
  /* The three lines the scores compare, over the text's n characters: yours, greedy's, the sample's. */
  function scoredLines(b, s, greedy, sample) {
    var st = b.st, n = st.g.ids.length;
    var lines = [
      { name: "yours", colour: C.yours, label: "your text", ids: st.g.ids, logprobs: st.g.logprobs },
      { name: "greedy", colour: C.greedy, label: "greedy (T = 0)", ids: greedy.ids.slice(0, n),
        logprobs: greedy.logprobs.slice(0, n) },
      { name: "sample", colour: C.sample, label: "sample (T = " + s.T.toFixed(2) + ", seed " + s.seed + ")",
        ids: sample.ids.slice(0, n), logprobs: sample.logprobs.slice(0, n) }];
    lines.forEach(function (l) {
      l.text = window.slm.decode(b.m, l.ids);
      l.total = sum(l.logprobs);
      l.mean = n ? l.total / n : null;
    });
    return lines;
  }
  function render(b, s, greedy, sample) {
    var st = b.st, n = st.g.ids.length, m = b.m, lines = scoredLines(b, s, greedy, sample);
    drawText(b);
    b.drawn = { s: s, lines: lines };
    drawCharts(b);
    var state = { prompt: st.prompt, text: lines[0].text, logprobs: st.g.logprobs, total: lines[0].total,
                  mean: lines[0].mean, temperature: s.T, seed: s.seed, error: null };
    ["greedy", "sample"].forEach(function (k, j) {
      var l = lines[j + 1];
      state[k] = { text: l.text, logprobs: l.logprobs, total: l.total, mean: l.mean };
    });
    b.ui.root.setAttribute("data-state", JSON.stringify(state));
    var last = n ? " Last: " + JSON.stringify(m.chars[st.g.ids[n - 1]]) + ", log p = " + nats(st.g.logprobs[n - 1]) + " nats." : "";
    U.ok(b.ui, n + " character" + (n === 1 ? "" : "s") + " added" + (n >= MAX_CHARS ? " (the most this builder takes)." : ".") +
         last + (st.trimmed ? " (The prompt is the last " + m.config.block_size + " characters of your context.)" : ""));
  }
  /* Your context (in the secondary ink) and your characters, each a button back to before it. */
  function drawText(b) {
    var st = b.st, ui = b.ui, n = st.g.ids.length;
    b.v.hint.textContent = n ? "Your text so far, after your context (grey). Click a character to go back to just before it."
                             : "Your context (grey). Click a bar below, or press Greedy or Sample, to add a character.";
    U.showContext(ui, (st.prompt.length > 240 ? "\u2026" : "") + st.prompt.slice(-240), Infinity);
    st.g.ids.forEach(function (id, t) {
      var ch = b.m.chars[id];
      var span = el("span", { class: "slm-builder-char", "data-t": t, role: "button", tabindex: 0,
        title: "character " + (t + 1) + ": " + JSON.stringify(ch) + ", log p = " + nats(st.g.logprobs[t]) +
               " nats. Click to go back to just before it.",
        style: "background:" + C.chosen + ";border-bottom:2px solid " + C.yours + ";cursor:pointer;font-weight:bold" },
        ui.output, ch === "\n" ? STYLE.newline + "\n" : ch);
      span.onclick = function () { rewind(b, t); };
      span.onkeydown = function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); rewind(b, t); } };
    });
    el("span", { style: "color:" + C.yours + ";font-weight:bold" }, ui.output, "\u2588");  // where the next one goes
  }
  /* The bars and the scores at the column's width (drawn again when it changes: watchWidth). */
  function drawCharts(b) {
    var width = room(b.ui.chartBox);
    b.drawn.width = width;
    drawBars(b, b.drawn.s, width);
    drawScores(b, b.drawn.lines, b.st.g.ids.length, width);
  }
  /* The bars, `width` px wide: the model's TOP most probable next characters, Sample's
     tempered outline, a hit box per bar that chooses its character. Their title and caption
     are the page's own text, which wraps in a phone's column where an SVG's would not. */
  function drawBars(b, s, width) {
    var D = window.slm.decoding, st = b.st, m = b.m, box = b.ui.chartBox;
    var p = st.logp.map(Math.exp), top = D.order(st.logits, true).slice(0, TOP);
    var tempered = s.T > 0 && s.T !== 1 ? D.softmax(D.shape(st.logits, st.history, s.cfg)) : null;
    var left = 58, right = 8, slot = (width - left - right) / TOP;
    // a slot narrower than the label "<.01" at 13 px (about 24 px: a phone's slot is about 15)
    // writes the labels up the bars, at 12 px, with room above the plot for the tallest's
    var upright = slot >= 28, y1 = upright ? 20 : 32, y0 = y1 + 166;
    var hi = Math.max.apply(null, top.map(function (i) { return Math.max(p[i], tempered ? tempered[i] : 0); }));
    var axis = ticks(0, hi, 4), ymax = axis.values[axis.values.length - 1];
    if (ymax < hi) { ymax += axis.step; axis.values.push(ymax); }
    var frame = { left: left, y0: y0, y1: y1, slot: slot, upright: upright,
                  y: function (v) { return y0 - (y0 - y1) * v / ymax; } };
    var tail = inline(st.prompt + window.slm.decode(m, st.g.ids)).slice(-24);
    box.textContent = "";
    el("div", { style: "font-size:15px;font-weight:bold;color:" + C.ink }, box,
       "Next character after \u201c\u2026" + tail + "\u201d: click a bar to choose it");
    el("div", { style: "font-size:13px;color:" + C.faint }, box,
       "the model's " + TOP + " most probable of " + m.chars.length + " characters (" + STYLE.space + " a space, " +
       STYLE.newline + " a newline)");
    var g = canvas(box, width, y0 + 30, "group", "the " + TOP + " most probable next characters and their " +
                   "probabilities, a button each that chooses its character");
    yAxis(g, axis, frame.y, left, width - right, (y0 + y1) / 2, "probability");
    top.forEach(function (id, r) { drawBar(b, g, frame, id, r, p[id], tempered); });
    svg("line", { x1: left, x2: width - right, y1: y0, y2: y0, stroke: C.ink }, g);
    el("div", { style: "font-size:13px;color:" + C.faint + ";padding-left:" + left + "px" }, box,
       "bar labels: p(v | context); the greedy choice is the first bar");
    b.v.legend.textContent = "";
    swatch(b.v.legend, C.p, "solid", "p(v | context): the model's probability (T = 1); choosing v adds log p(v | context) to your score");
    if (tempered) swatch(b.v.legend, C.tempered, "outline", "what Sample draws from at T = " + s.T.toFixed(2));
  }
  /* Bar `r` (character `id`, probability `v`): its outline at T, its label, its hit box. */
  function drawBar(b, g, f, id, r, v, tempered) {
    var x = f.left + r * f.slot, ch = b.m.chars[id], y = f.y, slot = f.slot;
    svg("rect", { x: x + slot * 0.15, y: y(v), width: slot * 0.7, height: f.y0 - y(v), fill: C.p }, g);
    if (tempered) {
      svg("rect", { x: x + slot * 0.1, y: y(tempered[id]), width: slot * 0.8, height: Math.max(f.y0 - y(tempered[id]), 0),
                    fill: "none", stroke: C.tempered, "stroke-width": 2 }, g);
    }
    var above = Math.min(y(v), tempered ? y(tempered[id]) : f.y0) - 4, mid = x + slot / 2;
    svg("text", f.upright ? { x: mid, y: above, "font-size": 13, "text-anchor": "middle", fill: C.faint }
                          : { transform: "translate(" + (mid + 4) + "," + above + ") rotate(-90)", "font-size": 12, fill: C.faint },
        g, v >= 0.995 ? "1" : v >= 0.01 ? v.toFixed(2).slice(1) : "<.01");
    svg("text", { x: mid, y: f.y0 + 21, "font-size": 16, "text-anchor": "middle", fill: C.ink,
                  "font-family": STYLE.monospace }, g, show(ch));
    var hit = svg("rect", { x: x, y: f.y1 - 8, width: slot, height: f.y0 - f.y1 + 34, fill: "transparent",
                            class: "slm-builder-bar", "data-rank": r, "data-id": id, "data-char": ch,
                            role: "button", tabindex: 0, style: "cursor:pointer" }, g);
    svg("title", {}, hit, JSON.stringify(ch) + ": p = " + v.toFixed(4) + ", log p = " + nats(b.st.logp[id], 4) +
        " nats" + (tempered ? "; Sample draws it with probability " + tempered[id].toFixed(4) : "") + ". Click to choose it.");
    onActivate(hit, function () { pick(b, id); });
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
  /* The scores: the running chart (`width` px wide), then a row per line (its text, l, l per
     character). In a phone's column, where the text beside three other columns would get a
     dozen characters a line, each text has a row of its own under its line's numbers. */
  function drawScores(b, lines, n, width) {
    var v = b.v, cell = "padding:.2em .5em;vertical-align:top;", below = width < 480;
    v.table.textContent = "";
    v.lineBox.textContent = "";
    v.scoreTitle.textContent = "Your score beside greedy's and a sample's, over the same " +
      (n ? n + " character" + (n === 1 ? "" : "s") : "characters");
    if (!n) {
      el("div", { style: "font-size:13px;color:" + C.faint }, v.lineBox,
         "Add a character: its log-probability, and greedy's and the sample's over as many characters, appear here.");
      return;
    }
    drawRunning(v.lineBox, lines, n, width);
    var head = el("tr", {}, v.table);
    ["", "text (" + STYLE.newline + " a newline)", "\u2113 (nats)", "per character (nats)"].forEach(function (h, j) {
      if (below && j === 1) return;
      el("th", { style: "text-align:" + (j > 1 ? "right" : "left") + ";padding:.2em .5em;border-bottom:1px solid " +
                        STYLE.table_rule + ";font-weight:normal;color:" + C.faint }, head, h);
    });
    lines.forEach(function (l) {
      var tr = el("tr", { class: "slm-builder-row", "data-line": l.name }, v.table);
      swatch(el("td", { style: cell }, tr), l.colour, "line", l.label, l.name === "yours",
             DASH[l.name] && DASH[l.name].css);
      var text = el("td", { style: cell + "font-family:monospace;white-space:pre-wrap;overflow-wrap:anywhere" }, tr,
                    inline(l.text));
      el("td", { class: "slm-builder-total", style: cell + "text-align:right;font-family:monospace" }, tr, nats(l.total));
      el("td", { class: "slm-builder-mean", style: cell + "text-align:right;font-family:monospace" }, tr, nats(l.mean));
      if (!below) return;
      text.colSpan = 3;
      text.style.paddingBottom = ".7em";
      el("tr", { class: "slm-builder-text", "data-line": l.name }, v.table).appendChild(text);
    });
  }
  /* The running log-probability, `width` px wide: l after t characters, for the three texts. */
  function drawRunning(box, lines, n, width) {
    var H = 206, left = 58, right = 12, y0 = 164, y1 = 12;
    var runs = lines.map(function (l) {
      var acc = 0;
      return [0].concat(l.logprobs.map(function (v) { acc += v; return acc; }));
    });
    var lo = Math.min.apply(null, runs.map(function (r) { return Math.min.apply(null, r); }));
    var axis = ticks(Math.min(lo, -0.5), 0, 4), ymin = axis.values[0];
    if (ymin > lo) { ymin -= axis.step; axis.values.unshift(ymin); }
    function x(t) { return left + (width - left - right) * t / n; }
    function y(v) { return y1 + (y0 - y1) * v / ymin; }
    var g = canvas(box, width, H, "img", "the running log-probability of your text, greedy's and the sample's");
    yAxis(g, axis, y, left, width - right, (y0 + y1) / 2, "\u2113 so far (nats)");
    var xt = ticks(0, n, Math.max(1, Math.min(n, 8, Math.floor((width - left - right) / 45))));  // 45 px a label
    xt.values.filter(function (t) { return Number.isInteger(t) || xt.step >= 1; }).forEach(function (t) {
      svg("line", { x1: x(t), x2: x(t), y1: y0, y2: y0 + 4, stroke: C.ink }, g);
      svg("text", { x: x(t), y: y0 + 18, "font-size": 13, "text-anchor": "middle", fill: C.ink }, g, String(Math.round(t)));
    });
    svg("line", { x1: left, x2: width - right, y1: y0, y2: y0, stroke: C.ink }, g);
    svg("text", { x: (left + width - right) / 2, y: H - 4, "font-size": 14, "text-anchor": "middle", fill: C.ink }, g,
        "characters added, t");
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

  /* The charts again when the column's width changes (a phone turned, a window resized, the
     explorer shown after it was drawn hidden); while an action runs, its own drawing measures. */
  function watchWidth(b) {
    if (typeof ResizeObserver === "undefined") return;
    new ResizeObserver(function () {
      if (b.drawn && !b.pending && room(b.ui.chartBox) !== b.drawn.width) drawCharts(b);
    }).observe(b.ui.view);
  }

  function builder(ui, m) {
    ui.root.style.maxWidth = "720px";
    var b = { ui: ui, m: m, c: controls(ui), buttons: buttons(ui), v: view(ui), st: null, drawn: null,
              queue: Promise.resolve(), refs: {}, pending: 0, typed: 0 };
    bind(b);
    watchWidth(b);
    setBusy(b, true);
    return function () { return act(b, start); };
  }

  window.slmExplorers.register("builder", builder);
})();
