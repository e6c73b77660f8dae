/* The live beam-search explorer (chapter 2, shakespeare_lm.site.live: live.explorer("beam")):
   beam search on the reader's own context, on the real model in the page (slm_runtime.js),
   drawn as a tree that grows one step at a time.

     the search     beam.js (SlmBeam.Beam), shakespeare_lm.decoding.beam's beam_core in
                    JavaScript, tested against it in node: every extension of every live beam
                    and the finished ones are ranked together by summed log-probability over
                    the GNMT length penalty ((5 + |y|) / 6)^lambda, ties to the lower
                    candidate; a beam that ends with the stop keeps its slot with its final
                    score; the search ends when every slot is finished or after `horizon`
                    characters. Its final beams are Python's slm.beam_search(model, tok,
                    context, horizon, width, lambda, stop=...) (here each beam on a KV cache
                    of its own: the same numbers up to float rounding)
     greedy         the most probable character at each step: decoding.js's Generation at
                    temperature 0, as generate
     exact best     for horizons up to EXACT_MAX and no stop, the most probable continuation of
                    exactly `horizon` characters (beam.js's exactCore, beam.exact_core): by
                    branch and bound, log-probabilities being <= 0, a prefix below the best
                    complete line known (the beam's or greedy's) is pruned with its continuations
     the tree       one column per step; in each, the beam's slots best first, the two best
                    candidates that missed the cut, and greedy's and the exact best's nodes
                    where they are off the beam; each node shows its character and the
                    log-probability of its line so far
     the table      the tree's numbers as text, for a keyboard and a screen reader (the tree
                    is an image whose numbers are otherwise only in its tooltips): a row per
                    node, in the tree's order, built while its <details> is open

   The context is cut to its last (context window - horizon) characters, so the search always
   has room for the whole horizon. The root's data-state holds the search as JSON.

   One object `ex` holds an explorer: its frame (ui), model (m), controls, the search on
   screen (ex.s), what the tree last drew (ex.drawn: the search and its marks, for the
   table) and whether Play runs; the functions below bind its controls, run its
   search and draw it. */
(function () {
  "use strict";
  if (!window.slmExplorers) return;  // slm_explorers.js reports a missing runtime
  var U = window.slmExplorers.util, el = U.el, svg = U.svg, STYLE = U.style;
  var show = U.label, inline = U.inline, signed = U.signed, sum = U.sum;
  var C = Object.assign({ grey: STYLE.grey, ink: STYLE.ink, faint: STYLE.faint_ink, pale: STYLE.pale,
                          paper: STYLE.paper, kept: STYLE.kept, faded: STYLE.faded, fadedInk: STYLE.grey,
                          separator: STYLE.separator }, STYLE.colours);
  var NL = STYLE.newline;
  var EXACT_MAX = 6;       // the longest horizon with an exact search
  var EXACT_FRONTIER = 2000;  // the most prefixes the exact search may keep at one depth
  var RUNNERS_UP = 2;      // candidates shown per step that missed the cut
  var STEP_MS = 450;       // Play's pause between steps
  var STOPS = [["", "none"], ["\n", "a line break (" + NL + ")"], ["\n\n", "a blank line (" + NL + NL + ")"]];
  // the tree's geometry (px): the root's column, a step's column, a node, a row
  var G = { rootW: 112, colW: 60, nodeW: 50, nodeH: 34, rowH: 46, top: 30, left: 6 };
  var CONTROL = "display:flex;gap:.4em;align-items:center;font-size:13px";
  // "Try this" (slm_explorers.js's presets, which set every control to its default first)
  var START = "KATHARINA:\nMoved! in good time: let him that moved you ";
  var PRESETS = [
    { label: "greedy falls out", context: START, settings: { width: 3, length_penalty: 0, horizon: 6 }, stop: "",
      sets: "the context ends \u201c\u2026let him that moved you \u201d; w = 3; 6 new characters; no end",
      look: "greedy's orange line drops out of the beam; the green exact best is pruned at its second character, " +
            "yet it ends well above the beam's answer." },
    { label: "a wider beam finds the best", context: "ROMEO:\n", settings: { width: 5, length_penalty: 0, horizon: 6 },
      stop: "", sets: "the context is ROMEO: and a line break; w = 5; 6 new characters; no end",
      look: "the best beam's vermillion line is the green exact best. Set w to 3 and press Play: the beam misses it." },
    { label: "a length penalty at work", context: START, settings: { width: 4, length_penalty: 1, horizon: 12 },
      stop: "\n", sets: "a line break ends a beam; w = 4; \u03bb = 1; 12 new characters",
      look: "lines that end (a black bar) keep their slots while the others go on; the beam returns \u201call." + NL +
            "\u201d. Move \u03bb to 0 and press Play: the short \u201cto" + NL + "\u201d wins." }];

  function wait(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }
  function keyOf(ids) { return ids.join(","); }

  // --- controls ------------------------------------------------------------------------
  /* A range input with its value beside it. */
  function range(ui, name, text, min, max, step, value, title) {
    var input = U.field(ui.controls, text, { type: "range", min: min, max: max, step: step, value: value,
                                             "data-name": name, "data-default": value, style: "width:7em" }, title);
    U.readout(input, "2.2em");
    return input;
  }
  /* Width, length penalty, horizon and the stop; the buttons renamed Play and Step. */
  function controls(ui) {
    var c = {
      width: range(ui, "width", "beam width w", 1, 8, 1, 3, "how many partial continuations the beam keeps (1 is greedy)"),
      lambda: range(ui, "length_penalty", "length penalty \u03bb", 0, 2, 0.1, 0,
                    "the GNMT exponent: the beam ranks by log-probability / ((5 + length) / 6)^\u03bb; 0 ranks by log-probability alone"),
      horizon: range(ui, "horizon", "new characters", 1, 20, 1, 6,
                     "how many characters the search adds; up to " + EXACT_MAX + " it also finds the exact best") };
    var stopWrap = el("label", { style: CONTROL, title: "a beam that ends with this keeps its slot with its final score" },
                      ui.controls);
    el("span", {}, stopWrap, "a beam ends at");
    c.stop = el("select", { "data-name": "stop", style: "font-size:13px" }, stopWrap);
    STOPS.forEach(function (s) { el("option", { value: s[0] }, c.stop, s[1]); });
    ui.sample.textContent = "Play";
    ui.cont.textContent = "Step";
    ui.treeBox = el("div", { class: "slm-beam-tree", style: "overflow-x:auto;margin:.3em 0" }, ui.view);
    ui.legend = el("div", { class: "slm-beam-legend", style: "display:flex;flex-wrap:wrap;gap:.3em 1.1em;font-size:12px;" +
                            "color:" + C.ink + ";margin:.2em 0 .4em" }, ui.view);
    return c;
  }
  function bind(ex) {
    var ui = ex.ui, c = ex.c;
    U.presets(ui, PRESETS, function (p) { c.stop.value = p.stop; reset(ex); play(ex); });
    ui.sample.onclick = function () { play(ex); };
    ui.cont.onclick = function () { if (!ex.playing && !busyWith(ex)) advance(ex); };
    ui.context.addEventListener("input", function () { reset(ex); });
    [c.width, c.lambda, c.horizon, c.stop].forEach(function (input) {
      input.addEventListener("change", function () { reset(ex); });
    });
  }

  // --- the search state ----------------------------------------------------------------
  /* A new search from the controls: the context encoded and cut, nothing run yet; the beam
     (beam.js), greedy's line (decoding.js's Generation) and the model they both ask. */
  function fresh(ex) {
    var D = window.slm.decoding, m = ex.m, c = ex.c, block = m.config.block_size;
    var n = +c.horizon.value, ids = D.encode(m.chars, ex.ui.context.value);  // an unknown character: its message
    if (!ids.length) throw new Error("the context is empty: type at least one character");
    var keep = Math.min(ids.length, block - n), prompt = ids.slice(ids.length - keep);
    var stops = c.stop.value ? [c.stop.value] : [], w = +c.width.value, lam = +c.lambda.value;
    return { id: ++ex.serial, ids: prompt, cut: ids.length - keep, w: w, lam: lam, n: n, stops: stops, t: 0,
             done: false, chars: m.chars, nodes: { "": { key: "", ids: [], ell: 0, parent: null } }, cols: [],
             exact: null, model: window.slm.modelFunction(m),
             beam: new window.slm.beam.Beam(prompt, m.config.vocab_size, n, w, lam,
                                            { settings: { stop: stops }, chars: m.chars, runnersUp: RUNNERS_UP }),
             greedy: new D.Generation(m.chars, block, window.slm.decode(m, prompt), n, { temperature: 0, stop: stops }) };
  }
  /* The tree's node for the line `ids` (its log-probabilities `lps`), made on first sight. */
  function node(s, ids, lps, ended) {
    var key = keyOf(ids);
    if (!s.nodes[key]) {
      s.nodes[key] = { key: key, ids: ids, t: ids.length, ch: s.chars[ids[ids.length - 1]], lp: lps[lps.length - 1],
                       ell: sum(lps), parent: keyOf(ids.slice(0, -1)), ended: ended || null };
    }
    return s.nodes[key];
  }
  /* The model as search `s` asks it, refused once another search has replaced it. */
  function modelOf(ex, s) {
    return function (contexts) {
      if (ex.s !== s || s.id !== ex.serial) return Promise.reject(new Error("stale"));
      return s.model(contexts);
    };
  }
  /* One step of the beam (its column: the candidates down to the runners-up, as nodes of
     the tree), and one of greedy's line. */
  function step(ex, s) {
    var model = modelOf(ex, s);
    return s.beam.step(model).then(function (column) {
      s.cols.push(column.map(function (e) {
        if (!e.carried) node(s, e.ids, e.logprobs, e.reason);
        return { key: keyOf(e.ids), kept: e.kept, carried: e.carried };
      }));
      return window.slm.decoding.run(s.greedy, model, 1);
    }).then(function () {
      var g = s.greedy;
      if (g.ids.length) node(s, g.ids, g.logprobs, g.stopReason === "stop_sequence" ? "stop_sequence" : null);
      s.t = s.beam.t;
      s.done = s.beam.done;
      return s;
    });
  }
  /* Every beam, best first (beam.js's result), with its node's key. */
  function result(s) {
    return s.beam.result().map(function (h) {
      return { key: keyOf(h.ids), ids: h.ids, lps: h.logprobs, score: h.score, reason: h.reason };
    });
  }
  /* The exact best (beam.js's exactCore), bounded by the best complete line known: the
     beam's or greedy's. */
  function exact(ex, s) {
    var lines = result(s).map(function (h) { return h.lps; }).concat([s.greedy.logprobs]);
    var bound = Math.max.apply(null, lines.map(sum));
    return Promise.resolve(window.slm.beam.exactCore(modelOf(ex, s), s.ids, s.n, bound, { maxFrontier: EXACT_FRONTIER }))
      .then(function (r) {
        for (var i = 1; i <= r.ids.length; i++) node(s, r.ids.slice(0, i), r.logprobs.slice(0, i));
        return { ids: r.ids, lps: r.logprobs, ell: sum(r.logprobs), prefixes: r.prefixes };
      }, function (e) {
        if (e.name !== "RuntimeError") throw e;
        return { skipped: "more than " + EXACT_FRONTIER + " prefixes at one depth score above the bound" };
      });
  }

  // --- running it --------------------------------------------------------------------
  function busyWith(ex) { return !!ex.inFlight && ex.inFlight === ex.s; }
  function reset(ex) {
    var ui = ex.ui;
    ex.playing = false;
    ex.serial++;
    ex.s = null;
    ui.output.textContent = "";
    try { ex.s = fresh(ex); } catch (e) { return failed(ex, e); }
    var s = ex.s;
    draw(ex, s);
    state(ex, s);
    buttons(ex);
    U.ok(ui, "press Play to grow the tree one step at a time, or Step for a single step" +
         (s.cut ? " (the search sees the context's last " + s.ids.length + " characters)" : ""));
  }
  function failed(ex, e) {
    var ui = ex.ui;
    ex.s = null;
    ex.playing = false;
    ui.treeBox.textContent = "";
    ui.output.textContent = "";
    ex.drawn = null;
    table(ex);
    ui.root.setAttribute("data-state", JSON.stringify({ error: String(e.message || e) }));
    U.fail(ui, e);
    buttons(ex);
  }
  function buttons(ex) {
    ex.ui.sample.textContent = ex.playing ? "Pause" : "Play";
    ex.ui.sample.disabled = false;
    ex.ui.cont.disabled = ex.playing || busyWith(ex);
  }
  /* One step of the current search (a new one if it is done), then the exact best after
     the last; a Promise of whether there is more to do. */
  function advance(ex) {
    if (!ex.s || ex.s.done) {
      var was = ex.playing;
      reset(ex);
      if (!ex.s) return Promise.resolve(false);
      ex.playing = was;
    }
    var s = ex.s;
    ex.inFlight = s;
    buttons(ex);
    U.ok(ex.ui, "step " + (s.t + 1) + " of " + s.n + ": running the model on " + s.beam.live.length + " beam(s)\u2026");
    return step(ex, s).then(function () {
      if (ex.s !== s) return false;
      if (s.done && !s.stops.length && s.n <= EXACT_MAX) {
        draw(ex, s);
        U.ok(ex.ui, "the beam is done; searching for the exact best\u2026");
        return exact(ex, s).then(function (r) { s.exact = r; return false; });
      }
      return !s.done;
    }).then(function (more) { return shown(ex, s, more); }).catch(function (e) {
      if (ex.inFlight === s) ex.inFlight = null;
      if (ex.s !== s || (e && e.message === "stale")) return false;
      failed(ex, e);
      return false;
    });
  }
  /* After a step of `s`: the tree, the state and the report, if `s` is still the search. */
  function shown(ex, s, more) {
    if (ex.inFlight === s) ex.inFlight = null;
    if (ex.s !== s) { buttons(ex); return false; }
    draw(ex, s);
    state(ex, s);
    report(ex, s);
    buttons(ex);
    return more;
  }
  /* Play: a step every STEP_MS until the search is done or Pause is pressed. */
  function play(ex) {
    if (ex.playing) { ex.playing = false; buttons(ex); return Promise.resolve(); }
    if (busyWith(ex)) return Promise.resolve();
    ex.playing = true;
    buttons(ex);
    function loop() {
      if (!ex.playing) return Promise.resolve();
      return advance(ex).then(function (more) {
        if (!more || !ex.playing) { ex.playing = false; buttons(ex); return; }
        return wait(STEP_MS).then(loop);
      });
    }
    return loop();
  }

  // --- what is shown -------------------------------------------------------------------
  function text(s, ids) { return ids.map(function (i) { return s.chars[i]; }).join(""); }
  function state(ex, s) {
    function exported(h) { return { text: text(s, h.ids), ids: h.ids, logprob: sum(h.lps), score: h.score, reason: h.reason }; }
    var exactOut = s.exact && !s.exact.skipped ? { text: text(s, s.exact.ids), ids: s.exact.ids, logprob: s.exact.ell,
                                              prefixes: s.exact.prefixes } : s.exact;
    ex.ui.root.setAttribute("data-state", JSON.stringify({
      context: text(s, s.ids), width: s.w, length_penalty: s.lam, horizon: s.n, stop: s.stops[0] || null,
      steps: s.t, columns: s.cols.length, done: s.done && ex.inFlight !== s, beams: result(s).map(exported),
      greedy: { text: text(s, s.greedy.ids), ids: s.greedy.ids, logprob: sum(s.greedy.logprobs) }, exact: exactOut,
      model_runs: s.model.passes }));
  }
  /* The lines of the output: every beam, greedy's line, the exact best or why there is none. */
  function reportLines(s) {
    var lines = [], why = { max_tokens: "", stop_sequence: ", ended at the stop" };
    result(s).forEach(function (h, i) {
      lines.push((i ? "      " : "beam  ") + (i + 1) + ". \u201c" + inline(text(s, h.ids)) + "\u201d  \u2113 = " +
                 signed(sum(h.lps), 3) + (s.lam ? ", score " + signed(h.score, 3) : "") + (why[h.reason] || ""));
    });
    lines.push("greedy   \u201c" + inline(text(s, s.greedy.ids)) + "\u201d  \u2113 = " + signed(sum(s.greedy.logprobs), 3));
    if (s.exact && !s.exact.skipped) {
      lines.push("exact    \u201c" + inline(text(s, s.exact.ids)) + "\u201d  \u2113 = " + signed(s.exact.ell, 3) +
                 " (branch and bound ran the model on " + s.exact.prefixes + " prefixes)");
    } else if (s.exact) lines.push("exact    not found: " + s.exact.skipped);
    else if (s.done && s.stops.length) lines.push("exact    searched only without a stop");
    else if (s.done) lines.push("exact    searched only for up to " + EXACT_MAX + " new characters");
    return lines;
  }
  function report(ex, s) {
    ex.ui.output.textContent = reportLines(s).join("\n");
    var pass = s.done ? "done after " + s.t + " step" + (s.t > 1 ? "s" : "") : "step " + s.t + " of " + s.n;
    U.ok(ex.ui, pass + "; the beam and greedy ran the model " + s.model.passes + " times" +
         (s.cut ? "; the search sees the context's last " + s.ids.length + " characters" : ""));
  }

  // --- the tree --------------------------------------------------------------------------
  /* The keys of every prefix of `ids`. */
  function prefixKeys(ids) {
    var keys = {};
    for (var i = 1; i <= ids.length; i++) keys[keyOf(ids.slice(0, i))] = true;
    return keys;
  }
  /* What the tree marks: greedy's and the exact best's paths, the lines still alive, the
     best beam's line; where each column's nodes go (the beam's slots, then greedy's and the
     exact best's where they are off it) and how many rows that takes. */
  function marks(s) {
    var k = { w: s.w, greedyRow: s.w + RUNNERS_UP, exactRow: s.w + RUNNERS_UP + 1, used: Math.max(s.w, 1),
              greedy: prefixKeys(s.greedy.ids), exact: {}, best: {}, alive: {}, showExact: s.exact && !s.exact.skipped };
    if (k.showExact) k.exact = prefixKeys(s.exact.ids);
    function up(key, into) { while (key) { into[key] = true; key = s.nodes[key].parent; } }
    (s.cols[s.cols.length - 1] || []).forEach(function (e) { if (e.kept) up(e.key, k.alive); });
    var beams = result(s);
    if (s.t && beams.length) up(beams[0].key, k.best);
    function off(key, row, place) {
      if (key && !place[key]) place[key] = { row: row, entry: { key: key, kept: false, carried: false, off: true } };
    }
    k.layout = s.cols.map(function (entries, c) {
      var t = c + 1, place = {};
      entries.forEach(function (e, r) { place[e.key] = { row: r, entry: e }; });
      off(t <= s.greedy.ids.length ? keyOf(s.greedy.ids.slice(0, t)) : null, k.greedyRow, place);
      off(k.showExact ? keyOf(s.exact.ids.slice(0, t)) : null, k.exactRow, place);
      Object.keys(place).forEach(function (key) { k.used = Math.max(k.used, place[key].row + 1); });
      return place;
    });
    return k;
  }
  function colX(t) { return G.left + G.rootW + 16 + (t - 1) * G.colW + G.colW / 2; }
  function rowY(row) { return G.top + row * G.rowH + G.nodeH / 2; }
  /* The tree: the root, the rows' names, then one column per step. */
  function draw(ex, s) {
    var k = marks(s), x0 = G.left + G.rootW + 16, ui = ex.ui;
    ex.drawn = { s: s, k: k };
    var height = G.top + k.used * G.rowH + 4, widthPx = x0 + Math.max(s.cols.length, s.cols.length ? 1 : 4) * G.colW + 8;
    ui.treeBox.textContent = "";
    var root = svg("svg", { width: widthPx, height: height, viewBox: "0 0 " + widthPx + " " + height, role: "img",
                            "aria-label": "the beam search tree after " + s.cols.length + " step" +
                                          (s.cols.length === 1 ? "" : "s") + "; its numbers are in the table below it",
                            class: "slm-beam-svg",
                            style: "display:block;font-family:" + STYLE.font }, ui.treeBox);
    var g = { root: root, bands: svg("g", {}, root), edges: svg("g", {}, root), nodes: svg("g", {}, root) };
    var pos = [{ "": drawRoot(s, g) }];
    drawRowNames(s, k, g, widthPx);
    k.layout.forEach(function (place, c) {
      var t = c + 1;
      svg("text", { x: colX(t), y: 14, "text-anchor": "middle", "font-size": 11, fill: C.faint }, root, "step " + t);
      pos[t] = {};
      var col = svg("g", { class: "slm-beam-col", "data-step": t }, g.nodes);
      Object.keys(place).forEach(function (key) { drawNode(s, k, g, col, pos, t, place[key]); });
    });
    if (s.cols.length) ui.treeBox.scrollLeft = ui.treeBox.scrollWidth;
    table(ex);
  }
  /* The root, the end of the context: where its edges start. */
  function drawRoot(s, g) {
    var rootY = rowY((s.w - 1) / 2), rootX = G.left + G.rootW / 2;
    svg("text", { x: rootX, y: 14, "text-anchor": "middle", "font-size": 12, "font-weight": "bold", fill: C.ink }, g.root,
        "context");
    svg("rect", { x: G.left, y: rootY - G.nodeH / 2, width: G.rootW, height: G.nodeH, rx: 3, fill: C.pale, stroke: C.grey },
        g.nodes);
    svg("text", { x: rootX, y: rootY + 4, "text-anchor": "middle", "font-size": 12, "font-family": STYLE.monospace,
                  fill: C.ink }, g.nodes, "\u2026" + Array.from(text(s, s.ids)).slice(-9).map(show).join(""));
    return { x: G.left + G.rootW, y: rootY };
  }
  /* The row groups, named at the left, and the line under the beam's slots; before the
     first step, what to press. */
  function drawRowNames(s, k, g, widthPx) {
    var x0 = G.left + G.rootW + 16;
    if (!s.cols.length) {
      svg("text", { x: x0, y: rowY((s.w - 1) / 2) + 4, "font-size": 12, fill: C.faint }, g.root,
          "\u25b8 Play or Step: one column per step");
      return;
    }
    function rowLabel(row, words) {
      if (row >= k.used) return;
      svg("text", { x: G.left + G.rootW, y: rowY(row) + 4, "text-anchor": "end", "font-size": 11, fill: C.faint }, g.root, words);
    }
    var usedRows = {};
    k.layout.forEach(function (p) { Object.keys(p).forEach(function (key) { usedRows[p[key].row] = true; }); });
    rowLabel(s.w, "missed the cut \u25b8");
    if (usedRows[k.greedyRow]) rowLabel(k.greedyRow, "greedy, off the beam \u25b8");
    if (usedRows[k.exactRow]) rowLabel(k.exactRow, "exact, off the beam \u25b8");
    var sepY = G.top + s.w * G.rowH - (G.rowH - G.nodeH) / 2;
    svg("line", { x1: x0 - 8, x2: widthPx - 4, y1: sepY, y2: sepY, stroke: C.separator, "stroke-dasharray": "2 3" }, g.root);
  }
  /* A node of column `t` at its place `p`, its edge from its parent, and the bands of
     greedy's and the exact best's paths under it. */
  function drawNode(s, k, g, col, pos, t, p) {
    var e = p.entry, key = e.key, nd = s.nodes[key], x = colX(t), y = rowY(p.row);
    pos[t][key] = e.carried ? { x: x + 5, y: y, carried: true } : { x: x + G.nodeW / 2, y: y };
    var from = pos[t - 1][e.carried ? key : nd.parent];
    if (!from) return;
    var look = lookOf(k, e);
    drawEdge(k, g, e, nd, { x1: from.x, y1: from.y, x2: e.carried ? x - 5 : x - G.nodeW / 2, y2: y }, look);
    var node = svg("g", { class: "slm-beam-node", "data-key": key,
                          "data-kind": e.carried ? "ended" : look.live ? "kept" : "pruned" }, col);
    svg("title", {}, node, tip(s, nd));
    if (e.carried) {  // a finished beam holding its slot
      svg("rect", { x: x - 5, y: y - 5, width: 10, height: 10, fill: look.live ? C.black : C.faded }, node);
      return;
    }
    drawBox(node, nd, x, y, look);
  }
  /* How an entry is drawn: on a line still alive, on the best beam's line, or pruned. */
  function lookOf(k, e) {
    var live = !!k.alive[e.key] && e.kept, onBest = !!k.best[e.key] && e.kept;
    return { live: live, onBest: onBest, solid: live || onBest,
             colour: onBest ? C.vermillion : live ? C.blue : C.grey, width: onBest ? 2.4 : live ? 1.5 : 1 };
  }
  /* The edge from a node's parent (`edge`: its ends), over the bands of greedy's and the
     exact best's paths where it is on them. */
  function drawEdge(k, g, e, nd, edge, look) {
    var x = edge.x2 + G.nodeW / 2, y = edge.y2;
    var onPath = function (keys) { return keys[e.key] && !e.carried && (keys[nd.parent] || nd.parent === ""); };
    if (onPath(k.exact)) band(g.bands, edge, x, y, C.green, 12, 0.45, 7, 8, "");
    if (onPath(k.greedy)) band(g.bands, edge, x, y, C.orange, 5, 0.9, 4, 6, "8 5");  // dashed: not the best beam's solid
    svg("line", Object.assign({ stroke: look.colour, "stroke-width": look.width,
                                "stroke-dasharray": e.carried ? "1 3" : look.solid ? "" : "3 2",
                                "stroke-opacity": look.solid ? 1 : 0.6 }, edge), g.edges);
  }
  /* A path's band under an edge and its node: `wide` px, `pad` px around the node. */
  function band(parent, edge, x, y, colour, wide, opacity, pad, rx, dash) {
    var line = { stroke: colour, "stroke-width": wide, "stroke-opacity": opacity };
    if (dash) line["stroke-dasharray"] = dash;
    else line["stroke-linecap"] = "round";
    svg("line", Object.assign({}, edge, line), parent);
    svg("rect", { x: x - G.nodeW / 2 - pad, y: y - G.nodeH / 2 - pad, width: G.nodeW + 2 * pad, height: G.nodeH + 2 * pad,
                  rx: rx, fill: colour, "fill-opacity": opacity }, parent);
  }
  /* A node's hover text: its line, l, its character's log p, its score, whether it ended. */
  function tip(s, nd) {
    return "\u201c" + inline(text(s, nd.ids)) + "\u201d: \u2113 = " + signed(nd.ell, 3) + (nd.lp !== undefined ?
           ", log p(" + inline(nd.ch) + ") = " + signed(nd.lp, 3) : "") +
           (s.lam ? ", score = " + signed(nd.ell / window.slm.beam.lengthPenalty(nd.t, s.lam), 3) : "") +
           (nd.ended ? "; ended at the stop" : "");
  }
  /* A node's box: its character and l, kept or pruned, and the bar of a line that ended. */
  function drawBox(node, nd, x, y, look) {
    var live = look.live, ink = live ? C.ink : C.fadedInk;
    svg("rect", { x: x - G.nodeW / 2, y: y - G.nodeH / 2, width: G.nodeW, height: G.nodeH, rx: 3,
                  fill: live ? C.kept : C.paper, stroke: look.solid ? look.colour : C.faded,
                  "stroke-width": look.width, "stroke-dasharray": look.solid ? "" : "3 2" }, node);
    svg("text", { x: x, y: y - 1, "text-anchor": "middle", "font-size": 15, "font-weight": "bold",
                  "font-family": STYLE.monospace, fill: ink }, node, show(nd.ch));
    svg("text", { x: x, y: y + 13, "text-anchor": "middle", "font-size": 11, fill: ink }, node, signed(nd.ell, 2));
    if (nd.ended) {
      svg("rect", { x: x + G.nodeW / 2 - 5, y: y - G.nodeH / 2, width: 5, height: G.nodeH, fill: live ? C.black : C.faded },
          node);
    }
  }
  /* Where a node of the tree stands, in words: its row group, and the lines it is on. */
  function where(s, k, p) {
    var e = p.entry, look = lookOf(k, e), key = e.key;
    var words = e.carried ? "ended at the stop, keeps its slot"
      : p.row < s.w ? (look.live ? "in the beam" : "in the beam, dropped later")
      : p.row === k.greedyRow ? "greedy's, off the beam"
      : p.row === k.exactRow ? "the exact best's, off the beam" : "missed the cut";
    if (look.onBest) words += "; the best beam's line";
    if (k.greedy[key] && !e.carried && p.row !== k.greedyRow) words += "; greedy's line";
    if (k.exact[key] && !e.carried && p.row !== k.exactRow) words += "; the exact best";
    return words;
  }
  /* The tree's numbers as a table, while its <details> is open: a row per node, column by
     column, each column's nodes top to bottom, as the tree draws them. */
  function table(ex) {
    var ui = ex.ui, d = ex.drawn;
    ui.tableBox.textContent = "";
    if (!ui.steps.open) return;
    if (!d || !d.s.cols.length) {
      el("p", { style: "margin:.3em 0;color:" + C.faint }, ui.tableBox, "No step yet: press Play or Step.");
      return;
    }
    var s = d.s, k = d.k, cell = "padding:.1em .6em;text-align:left;white-space:nowrap";
    var t = el("table", { class: "slm-beam-table", style: "border-collapse:collapse;font-size:12px;margin:.3em 0" },
               ui.tableBox);
    var head = el("tr", { style: "border-bottom:1px solid " + STYLE.table_rule }, el("thead", {}, t));
    ["step", "line so far", "\u2113", "log p(character)"].concat(s.lam ? ["score"] : []).concat(["where"])
      .forEach(function (h) { el("th", { scope: "col", style: cell }, head, h); });
    var body = el("tbody", {}, t);
    k.layout.forEach(function (place, c) {
      Object.keys(place).map(function (key) { return place[key]; })
        .sort(function (a, b) { return a.row - b.row; })
        .forEach(function (p) {
          var nd = s.nodes[p.entry.key], tr = el("tr", { "data-key": p.entry.key }, body);
          el("th", { scope: "row", style: cell + ";font-weight:normal" }, tr, String(c + 1));
          el("td", { style: cell + ";font-family:" + STYLE.monospace }, tr, "\u201c" + inline(text(s, nd.ids)) + "\u201d");
          el("td", { style: cell }, tr, signed(nd.ell, 3));
          el("td", { style: cell }, tr, nd.lp !== undefined ? signed(nd.lp, 3) : "");
          if (s.lam) el("td", { style: cell }, tr, signed(nd.ell / window.slm.beam.lengthPenalty(nd.t, s.lam), 3));
          el("td", { style: cell }, tr, where(s, k, p));
        });
    });
  }
  /* The legend: every mark of the tree, in words. */
  function legend(ui) {
    function item(draw, words) {
      var span = el("span", { style: "display:inline-flex;align-items:center;gap:.35em" }, ui.legend);
      draw(svg("svg", { width: 30, height: 18, "aria-hidden": "true" }, span));
      el("span", {}, span, words);
    }
    var box = { x: 3, y: 2, width: 24, height: 14, rx: 2 };
    function rect(g, attrs) { return svg("rect", Object.assign({}, box, attrs), g); }
    item(function (g) { rect(g, { fill: C.kept, stroke: C.blue, "stroke-width": 1.5 }); }, "in the beam, on a line still alive");
    item(function (g) { rect(g, { fill: C.paper, stroke: C.faded, "stroke-dasharray": "3 2" }); },
         "pruned: dropped from the beam, or missed the cut");
    item(function (g) { rect(g, { fill: C.kept, stroke: C.vermillion, "stroke-width": 2.4 }); }, "the best beam's line");
    item(function (g) { svg("line", { x1: 2, y1: 9, x2: 28, y2: 9, stroke: C.orange, "stroke-width": 5, "stroke-dasharray": "8 5" }, g); },
         "greedy's line");
    item(function (g) { svg("rect", { x: 1, y: 1, width: 28, height: 16, rx: 5, fill: C.green, "fill-opacity": 0.45 }, g); },
         "the exact best (up to " + EXACT_MAX + " characters, no stop)");
    item(function (g) {
      rect(g, { fill: C.kept, stroke: C.blue });
      svg("rect", { x: 22, y: 2, width: 5, height: 14, fill: C.black }, g);
    }, "ended at the stop (\u25a0: it keeps its slot)");
    el("div", { style: "flex-basis:100%;color:" + C.faint }, ui.legend,
       "Under each character: \u2113, the log-probability of its line so far. The beam keeps the w best lines by " +
       "\u2113 / ((5 + n) / 6)^\u03bb, n the line's length in characters; hover over a node, or open the table below, for its numbers.");
  }

  function beamExplorer(ui, m) {
    ui.root.style.maxWidth = "720px";
    var ex = { ui: ui, m: m, c: controls(ui), s: null, drawn: null, playing: false, serial: 0, inFlight: null };
    legend(ui);
    ui.steps = el("details", { class: "slm-beam-steps", style: "font-size:13px;margin:.2em 0 .4em" }, ui.view);
    el("summary", {}, ui.steps, "The tree's numbers, node by node, as a table");
    ui.tableBox = el("div", { style: "overflow-x:auto" }, ui.steps);
    ui.steps.addEventListener("toggle", function () { table(ex); });
    bind(ex);
    return function () { reset(ex); };
  }

  window.slmExplorers.register("beam", beamExplorer);
})();
