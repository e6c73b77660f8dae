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

   The context is cut to its last (context window - horizon) characters, so the search always
   has room for the whole horizon. The root's data-state holds the search as JSON. */
(function () {
  "use strict";
  var X = window.slmExplorers;
  if (!X || window.slmBeamRegistered) return;  // slm_explorers.js reports a missing runtime
  window.slmBeamRegistered = true;
  var U = X.util, el = U.el;
  // shakespeare_lm.site.style: PALETTE (Okabe and Ito), GREY, INK, FAINT_INK, PALE
  var C = { blue: "#0072B2", orange: "#E69F00", green: "#009E73", vermillion: "#D55E00", sky: "#56B4E9",
            black: "#000000", grey: "#8c8c8c", ink: "#222222", faint: "#595959", pale: "#f2f2f2",
            kept: "#c4e5f7", faded: "#b3b3b3", fadedInk: "#8c8c8c" };  // kept: sky mixed with white, as the diagrams' beam tree (tint 0.35)
  var FONT = "Helvetica Neue, Helvetica, Arial, sans-serif", MONO = "SFMono-Regular, Menlo, Consolas, monospace";
  var NS = "http://www.w3.org/2000/svg";
  var EXACT_MAX = 6;       // the longest horizon with an exact search
  var EXACT_FRONTIER = 2000;  // the most prefixes the exact search may keep at one depth
  var RUNNERS_UP = 2;      // candidates shown per step that missed the cut
  var STEP_MS = 450;       // Play's pause between steps
  var STOPS = [["", "none"], ["\n", "a line break (\u21b5)"], ["\n\n", "a blank line (\u21b5\u21b5)"]];
  // the tree's geometry (px): the root's column, a step's column, a node, a row
  var G = { rootW: 112, colW: 60, nodeW: 50, nodeH: 34, rowH: 46, top: 30, left: 6 };

  function show(ch) { return { " ": "\u2423", "\n": "\u21b5" }[ch] || ch; }  // as chapter 2 prints them
  function inline(text) { return Array.from(text).map(function (ch) { return ch === "\n" ? "\u21b5" : ch; }).join(""); }
  function signed(x, digits) { return (x < 0 ? "\u2212" : "") + Math.abs(x).toFixed(digits); }
  function sum(xs) { return xs.reduce(function (a, b) { return a + b; }, 0); }
  function svg(tag, attrs, parent, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function wait(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }

  function beamExplorer(ui, m) {
    var D = window.slm.decoding, B = window.slm.beam, V = m.config.vocab_size, block = m.config.block_size;
    var S = null, playing = false, serial = 0, inFlight = false;
    ui.root.style.maxWidth = "720px";

    // --- controls ------------------------------------------------------------------------
    function range(name, text, min, max, step, value, title) {
      var wrap = el("label", { style: "display:flex;gap:.4em;align-items:center;font-size:13px", title: title }, ui.controls);
      el("span", {}, wrap, text);
      var input = el("input", { type: "range", min: min, max: max, step: step, value: value, "data-name": name,
                                "data-default": value, style: "width:7em" }, wrap);
      var out = el("output", { style: "font-family:monospace;min-width:2.2em" }, wrap);
      function readout() { out.textContent = input.value; }
      input.addEventListener("input", readout);
      readout();
      return input;
    }
    var width = range("width", "beam width w", 1, 8, 1, 3, "how many partial continuations the beam keeps (1 is greedy)");
    var lambda = range("length_penalty", "length penalty \u03bb", 0, 2, 0.1, 0,
                       "the GNMT exponent: the beam ranks by log-probability / ((5 + length) / 6)^\u03bb; 0 ranks by log-probability alone");
    var horizon = range("horizon", "new characters", 1, 20, 1, 6,
                        "how many characters the search adds; up to " + EXACT_MAX + " it also finds the exact best");
    var stopWrap = el("label", { style: "display:flex;gap:.4em;align-items:center;font-size:13px",
                                 title: "a beam that ends with this keeps its slot with its final score" }, ui.controls);
    el("span", {}, stopWrap, "a beam ends at");
    var stop = el("select", { "data-name": "stop", style: "font-size:13px" }, stopWrap);
    STOPS.forEach(function (s) { el("option", { value: s[0] }, stop, s[1]); });

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
        look: "lines that end (a black bar) keep their slots while the others go on; the beam returns \u201call.\u21b5\u201d. " +
              "Move \u03bb to 0 and press Play: the short \u201cto\u21b5\u201d wins." }];
    function runPreset(p) { stop.value = p.stop; reset(); play(); }
    if (U.presets) U.presets(ui, PRESETS, runPreset);
    else {  // an older slm_explorers.js: the buttons alone
      var row = el("div", { class: "slm-presets", style: "display:flex;flex-wrap:wrap;gap:.4em;align-items:center;font-size:13px" });
      ui.root.insertBefore(row, ui.controls.nextSibling);
      el("span", { style: "color:" + C.faint }, row, "Try this:");
      PRESETS.forEach(function (p) {
        el("button", { type: "button", title: p.sets, style: "font-size:12px" }, row, p.label).onclick = function () {
          ui.context.value = p.context;
          [width, lambda, horizon].forEach(function (i) {
            i.value = p.settings[i.getAttribute("data-name")];
            i.dispatchEvent(new Event("input"));
          });
          runPreset(p);
        };
      });
    }

    ui.sample.textContent = "Play";
    ui.cont.textContent = "Step";
    ui.treeBox = el("div", { class: "slm-beam-tree", style: "overflow-x:auto;margin:.3em 0" }, ui.view);
    ui.legend = el("div", { class: "slm-beam-legend", style: "display:flex;flex-wrap:wrap;gap:.3em 1.1em;font-size:12px;" +
                            "color:" + C.ink + ";margin:.2em 0 .4em" }, ui.view);
    legend();

    // --- the search state ----------------------------------------------------------------
    /* A new search from the controls: the context encoded and cut, nothing run yet; the beam
       (beam.js), greedy's line (decoding.js's Generation) and the model they both ask. */
    function fresh() {
      var n = +horizon.value, text = ui.context.value;
      var ids = D.encode(m.chars, text);  // an unknown character: its message
      if (!ids.length) throw new Error("the context is empty: type at least one character");
      var keep = Math.min(ids.length, block - n), prompt = ids.slice(ids.length - keep);
      var stops = stop.value ? [stop.value] : [], w = +width.value, lam = +lambda.value;
      return { id: ++serial, ids: prompt, cut: ids.length - keep, w: w, lam: lam, n: n, stops: stops, t: 0,
               done: false, nodes: { "": { key: "", ids: [], ell: 0, parent: null } }, cols: [], exact: null,
               model: window.slm.modelFunction(m),
               beam: new B.Beam(prompt, V, n, w, lam, { settings: { stop: stops }, chars: m.chars, runnersUp: RUNNERS_UP }),
               greedy: new D.Generation(m.chars, block, window.slm.decode(m, prompt), n, { temperature: 0, stop: stops }) };
    }
    function keyOf(ids) { return ids.join(","); }
    function node(s, ids, lps, ended) {
      var key = keyOf(ids);
      if (!s.nodes[key]) {
        s.nodes[key] = { key: key, ids: ids, t: ids.length, ch: m.chars[ids[ids.length - 1]], lp: lps[lps.length - 1],
                         ell: sum(lps), parent: keyOf(ids.slice(0, -1)), ended: ended || null };
      }
      return s.nodes[key];
    }
    /* The model as search `s` asks it, refused once another search has replaced it. */
    function modelOf(s) {
      return function (contexts) {
        if (S !== s || s.id !== serial) return Promise.reject(new Error("stale"));
        return s.model(contexts);
      };
    }
    /* One step of the beam (its column: the candidates down to the runners-up, as nodes of
       the tree), and one of greedy's line. */
    function step(s) {
      var model = modelOf(s);
      return s.beam.step(model).then(function (column) {
        s.cols.push(column.map(function (e) {
          if (!e.carried) node(s, e.ids, e.logprobs, e.reason);
          return { key: keyOf(e.ids), kept: e.kept, carried: e.carried };
        }));
        return D.run(s.greedy, model, 1);
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
    function exact(s) {
      var lines = result(s).map(function (h) { return h.lps; }).concat([s.greedy.logprobs]);
      var bound = Math.max.apply(null, lines.map(sum));
      return Promise.resolve(B.exactCore(modelOf(s), s.ids, s.n, bound, { maxFrontier: EXACT_FRONTIER }))
        .then(function (r) {
          for (var i = 1; i <= r.ids.length; i++) node(s, r.ids.slice(0, i), r.logprobs.slice(0, i));
          return { ids: r.ids, lps: r.logprobs, ell: sum(r.logprobs), prefixes: r.prefixes };
        }, function (e) {
          if (e.name !== "RuntimeError") throw e;
          return { skipped: "more than " + EXACT_FRONTIER + " prefixes at one depth score above the bound" };
        });
    }

    // --- running it --------------------------------------------------------------------
    function reset() {
      playing = false;
      serial++;
      S = null;
      ui.output.textContent = "";
      try { S = fresh(); } catch (e) { return failed(e); }
      draw(S);
      state(S);
      buttons();
      U.ok(ui, "press Play to grow the tree one step at a time, or Step for a single step" +
           (S.cut ? " (the search sees the context's last " + S.ids.length + " characters)" : ""));
    }
    function failed(e) {
      S = null;
      playing = false;
      ui.treeBox.textContent = "";
      ui.output.textContent = "";
      ui.root.setAttribute("data-state", JSON.stringify({ error: String(e.message || e) }));
      U.fail(ui, e);
      buttons();
    }
    function buttons() {
      ui.sample.textContent = playing ? "Pause" : "Play";
      ui.sample.disabled = false;
      ui.cont.disabled = playing || (!!inFlight && inFlight === S);
    }
    /* One step of the current search (a new one if it is done), then the exact best after
       the last; a Promise of whether there is more to do. */
    function advance() {
      if (!S || S.done) {
        var was = playing;
        reset();
        if (!S) return Promise.resolve(false);
        playing = was;
      }
      var s = S;
      inFlight = s;
      buttons();
      U.ok(ui, "step " + (s.t + 1) + " of " + s.n + ": running the model on " + s.beam.live.length + " beam(s)\u2026");
      return step(s).then(function () {
        if (S !== s) return false;
        if (s.done && !s.stops.length && s.n <= EXACT_MAX) {
          draw(s);
          U.ok(ui, "the beam is done; searching for the exact best\u2026");
          return exact(s).then(function (r) { s.exact = r; return false; });
        }
        return !s.done;
      }).then(function (more) {
        if (inFlight === s) inFlight = null;
        if (S !== s) { buttons(); return false; }
        draw(s);
        state(s);
        report(s);
        buttons();
        return more;
      }).catch(function (e) {
        if (inFlight === s) inFlight = null;
        if (S !== s || (e && e.message === "stale")) return false;
        failed(e);
        return false;
      });
    }
    function play() {
      if (playing) { playing = false; buttons(); return Promise.resolve(); }
      if (inFlight && inFlight === S) return Promise.resolve();
      playing = true;
      buttons();
      function loop() {
        if (!playing) return Promise.resolve();
        return advance().then(function (more) {
          if (!more || !playing) { playing = false; buttons(); return; }
          return wait(STEP_MS).then(loop);
        });
      }
      return loop();
    }
    ui.sample.onclick = function () { play(); };
    ui.cont.onclick = function () { if (!playing && !(inFlight && inFlight === S)) advance(); };
    ui.context.addEventListener("input", reset);
    [width, lambda, horizon, stop].forEach(function (c) { c.addEventListener("change", reset); });

    // --- what is shown -------------------------------------------------------------------
    function text(ids) { return ids.map(function (i) { return m.chars[i]; }).join(""); }
    function exported(h) {
      return { text: text(h.ids), ids: h.ids, logprob: sum(h.lps), score: h.score, reason: h.reason };
    }
    function state(s) {
      var ex = s.exact && !s.exact.skipped ? { text: text(s.exact.ids), ids: s.exact.ids, logprob: s.exact.ell,
                                               prefixes: s.exact.prefixes } : s.exact;
      ui.root.setAttribute("data-state", JSON.stringify({
        context: text(s.ids), width: s.w, length_penalty: s.lam, horizon: s.n, stop: s.stops[0] || null,
        steps: s.t, columns: s.cols.length, done: s.done && inFlight !== s, beams: result(s).map(exported),
        greedy: { text: text(s.greedy.ids), ids: s.greedy.ids, logprob: sum(s.greedy.logprobs) }, exact: ex,
        model_runs: s.model.passes }));
    }
    function report(s) {
      var lines = [], beams = result(s);
      var why = { max_tokens: "", stop_sequence: ", ended at the stop" };
      beams.forEach(function (h, i) {
        lines.push((i ? "      " : "beam  ") + (i + 1) + ". \u201c" + inline(text(h.ids)) + "\u201d  \u2113 = " +
                   signed(sum(h.lps), 3) + (s.lam ? ", score " + signed(h.score, 3) : "") + (why[h.reason] || ""));
      });
      lines.push("greedy   \u201c" + inline(text(s.greedy.ids)) + "\u201d  \u2113 = " + signed(sum(s.greedy.logprobs), 3));
      if (s.exact && !s.exact.skipped) {
        lines.push("exact    \u201c" + inline(text(s.exact.ids)) + "\u201d  \u2113 = " + signed(s.exact.ell, 3) +
                   " (branch and bound ran the model on " + s.exact.prefixes + " prefixes)");
      } else if (s.exact) lines.push("exact    not found: " + s.exact.skipped);
      else if (s.done && s.stops.length) lines.push("exact    searched only without a stop");
      else if (s.done) lines.push("exact    searched only for up to " + EXACT_MAX + " new characters");
      ui.output.textContent = lines.join("\n");
      var pass = s.done ? "done after " + s.t + " step" + (s.t > 1 ? "s" : "") : "step " + s.t + " of " + s.n;
      U.ok(ui, pass + "; the beam and greedy ran the model " + s.model.passes + " times" + (s.cut ? "; the search sees the context's last " + s.ids.length +
           " characters" : ""));
    }

    /* The tree: the root, then one column per step. */
    function draw(s) {
      var w = s.w, rows = w + RUNNERS_UP, greedyRow = rows, exactRow = rows + 1;
      var pos = [{ "": null }], used = Math.max(w, 1);
      var x0 = G.left + G.rootW + 16;
      function X(t) { return x0 + (t - 1) * G.colW + G.colW / 2; }
      function Y(row) { return G.top + row * G.rowH + G.nodeH / 2; }
      var greedyKeys = {}, exactKeys = {}, bestKeys = {}, alive = {}, showExact = s.exact && !s.exact.skipped;
      for (var i = 1; i <= s.greedy.ids.length; i++) greedyKeys[keyOf(s.greedy.ids.slice(0, i))] = true;
      if (showExact) for (i = 1; i <= s.exact.ids.length; i++) exactKeys[keyOf(s.exact.ids.slice(0, i))] = true;
      function up(key, into) { while (key) { into[key] = true; key = s.nodes[key].parent; } }
      var last = s.cols[s.cols.length - 1] || [];
      last.forEach(function (e) { if (e.kept) up(e.key, alive); });
      var beams = result(s);
      if (s.t && beams.length) up(beams[0].key, bestKeys);
      // where each column's nodes go
      var layout = s.cols.map(function (entries, c) {
        var t = c + 1, place = {};
        entries.forEach(function (e, r) { place[e.key] = { row: r, entry: e }; });
        var gk = t <= s.greedy.ids.length ? keyOf(s.greedy.ids.slice(0, t)) : null;
        if (gk && !place[gk]) place[gk] = { row: greedyRow, entry: { key: gk, kept: false, carried: false, off: true } };
        var ek = showExact ? keyOf(s.exact.ids.slice(0, t)) : null;
        if (ek && !place[ek]) place[ek] = { row: exactRow, entry: { key: ek, kept: false, carried: false, off: true } };
        Object.keys(place).forEach(function (k) { used = Math.max(used, place[k].row + 1); });
        return place;
      });
      var height = G.top + used * G.rowH + 4, widthPx = x0 + Math.max(s.cols.length, s.cols.length ? 1 : 4) * G.colW + 8;
      ui.treeBox.textContent = "";
      var root = svg("svg", { width: widthPx, height: height, viewBox: "0 0 " + widthPx + " " + height, role: "img",
                              "aria-label": "the beam search tree", class: "slm-beam-svg",
                              style: "display:block;font-family:" + FONT }, ui.treeBox);
      var bands = svg("g", {}, root), edges = svg("g", {}, root), nodes = svg("g", {}, root);
      // the root: the end of the context
      var rootY = Y((w - 1) / 2), rootX = G.left + G.rootW / 2;
      svg("text", { x: rootX, y: 14, "text-anchor": "middle", "font-size": 12, "font-weight": "bold", fill: C.ink }, root, "context");
      svg("rect", { x: G.left, y: rootY - G.nodeH / 2, width: G.rootW, height: G.nodeH, rx: 3, fill: C.pale, stroke: C.grey },
          nodes);
      svg("text", { x: rootX, y: rootY + 4, "text-anchor": "middle", "font-size": 12, "font-family": MONO, fill: C.ink },
          nodes, "\u2026" + Array.from(text(s.ids)).slice(-9).map(show).join(""));
      pos[0][""] = { x: G.left + G.rootW, y: rootY };
      // the row groups, named at the left
      function rowLabel(row, words) {
        if (row >= used) return;
        svg("text", { x: G.left + G.rootW, y: Y(row) + 4, "text-anchor": "end", "font-size": 11, fill: C.faint }, root, words);
      }
      if (!s.cols.length) {
        svg("text", { x: x0, y: rootY + 4, "font-size": 12, fill: C.faint }, root,
            "\u25b8 Play or Step: one column per step");
      } else {
        var usedRows = {};
        layout.forEach(function (p) { Object.keys(p).forEach(function (k) { usedRows[p[k].row] = true; }); });
        rowLabel(w, "missed the cut \u25b8");
        if (usedRows[greedyRow]) rowLabel(greedyRow, "greedy, off the beam \u25b8");
        if (usedRows[exactRow]) rowLabel(exactRow, "exact, off the beam \u25b8");
        var sepY = G.top + w * G.rowH - (G.rowH - G.nodeH) / 2;
        svg("line", { x1: x0 - 8, x2: widthPx - 4, y1: sepY, y2: sepY, stroke: "#d9d9d9", "stroke-dasharray": "2 3" }, root);
      }
      layout.forEach(function (place, c) {
        var t = c + 1, col = svg("g", { class: "slm-beam-col", "data-step": t }, nodes), x = X(t);
        svg("text", { x: x, y: 14, "text-anchor": "middle", "font-size": 11, fill: C.faint }, root, "step " + t);
        pos[t] = {};
        Object.keys(place).forEach(function (key) {
          var p = place[key], e = p.entry, nd = s.nodes[key], y = Y(p.row);
          pos[t][key] = e.carried ? { x: x + 5, y: y, carried: true } : { x: x + G.nodeW / 2, y: y };
          var from = pos[t - 1][e.carried ? key : nd.parent];
          if (!from) return;
          var fx = from.x, live = !!alive[key] && e.kept, onBest = !!bestKeys[key] && e.kept;
          var x1 = e.carried ? x - 5 : x - G.nodeW / 2;
          // the paths of greedy and of the exact best, as bands under the edges
          if (exactKeys[key] && !e.carried && (exactKeys[nd.parent] || nd.parent === "")) {
            svg("line", { x1: fx, y1: from.y, x2: x1, y2: y, stroke: C.green, "stroke-width": 12, "stroke-opacity": 0.45,
                          "stroke-linecap": "round" }, bands);
            svg("rect", { x: x - G.nodeW / 2 - 7, y: y - G.nodeH / 2 - 7, width: G.nodeW + 14, height: G.nodeH + 14, rx: 8,
                          fill: C.green, "fill-opacity": 0.45 }, bands);
          }
          if (greedyKeys[key] && !e.carried && (greedyKeys[nd.parent] || nd.parent === "")) {
            svg("line", { x1: fx, y1: from.y, x2: x1, y2: y, stroke: C.orange, "stroke-width": 5, "stroke-opacity": 0.9,
                          "stroke-dasharray": "8 5" }, bands);  // dashed: not the best beam's solid
            svg("rect", { x: x - G.nodeW / 2 - 4, y: y - G.nodeH / 2 - 4, width: G.nodeW + 8, height: G.nodeH + 8, rx: 6,
                          fill: C.orange, "fill-opacity": 0.9 }, bands);
          }
          var colour = onBest ? C.vermillion : live ? C.blue : C.grey;
          svg("line", { x1: fx, y1: from.y, x2: x1, y2: y, stroke: colour, "stroke-width": onBest ? 2.4 : live ? 1.5 : 1,
                        "stroke-dasharray": e.carried ? "1 3" : live || onBest ? "" : "3 2",
                        "stroke-opacity": live || onBest ? 1 : 0.6 }, edges);
          var g = svg("g", { class: "slm-beam-node", "data-key": key, "data-kind": e.carried ? "ended" : live ? "kept" : "pruned" },
                      col);
          var tip = "\u201c" + inline(text(nd.ids)) + "\u201d: \u2113 = " + signed(nd.ell, 3) + (nd.lp !== undefined ?
                    ", log p(" + inline(nd.ch) + ") = " + signed(nd.lp, 3) : "") +
                    (s.lam ? ", score = " + signed(nd.ell / B.lengthPenalty(nd.t, s.lam), 3) : "") + (nd.ended ? "; ended at the stop" : "");
          svg("title", {}, g, tip);
          if (e.carried) {  // a finished beam holding its slot
            svg("rect", { x: x - 5, y: y - 5, width: 10, height: 10, fill: live ? C.black : C.faded }, g);
            return;
          }
          svg("rect", { x: x - G.nodeW / 2, y: y - G.nodeH / 2, width: G.nodeW, height: G.nodeH, rx: 3,
                        fill: live ? C.kept : "#ffffff", stroke: live || onBest ? colour : C.faded,
                        "stroke-width": onBest ? 2.4 : live ? 1.5 : 1, "stroke-dasharray": live || onBest ? "" : "3 2" }, g);
          svg("text", { x: x, y: y - 1, "text-anchor": "middle", "font-size": 15, "font-weight": "bold", "font-family": MONO,
                        fill: live ? C.ink : C.fadedInk }, g, show(nd.ch));
          svg("text", { x: x, y: y + 13, "text-anchor": "middle", "font-size": 11, fill: live ? C.ink : C.fadedInk }, g,
              signed(nd.ell, 2));
          if (nd.ended) svg("rect", { x: x + G.nodeW / 2 - 5, y: y - G.nodeH / 2, width: 5, height: G.nodeH, fill: live ? C.black : C.faded }, g);
        });
      });
      if (s.cols.length) ui.treeBox.scrollLeft = ui.treeBox.scrollWidth;
    }
    function legend() {
      function item(draw, words) {
        var span = el("span", { style: "display:inline-flex;align-items:center;gap:.35em" }, ui.legend);
        var icon = svg("svg", { width: 30, height: 18, "aria-hidden": "true" }, span);
        draw(icon);
        el("span", {}, span, words);
      }
      item(function (g) { svg("rect", { x: 3, y: 2, width: 24, height: 14, rx: 2, fill: C.kept, stroke: C.blue, "stroke-width": 1.5 }, g); },
           "in the beam, on a line still alive");
      item(function (g) {
        svg("rect", { x: 3, y: 2, width: 24, height: 14, rx: 2, fill: "#fff", stroke: C.faded, "stroke-dasharray": "3 2" }, g);
      }, "pruned: dropped from the beam, or missed the cut");
      item(function (g) { svg("rect", { x: 3, y: 2, width: 24, height: 14, rx: 2, fill: C.kept, stroke: C.vermillion, "stroke-width": 2.4 }, g); },
           "the best beam's line");
      item(function (g) { svg("line", { x1: 2, y1: 9, x2: 28, y2: 9, stroke: C.orange, "stroke-width": 5, "stroke-dasharray": "8 5" }, g); },
           "greedy's line");
      item(function (g) { svg("rect", { x: 1, y: 1, width: 28, height: 16, rx: 5, fill: C.green, "fill-opacity": 0.45 }, g); },
           "the exact best (up to " + EXACT_MAX + " characters, no stop)");
      item(function (g) {
        svg("rect", { x: 3, y: 2, width: 24, height: 14, rx: 2, fill: C.kept, stroke: C.blue }, g);
        svg("rect", { x: 22, y: 2, width: 5, height: 14, fill: C.black }, g);
      }, "ended at the stop (\u25a0: it keeps its slot)");
      el("div", { style: "flex-basis:100%;color:" + C.faint }, ui.legend,
         "Under each character: \u2113, the log-probability of its line so far. The beam keeps the w best lines by " +
         "\u2113 / ((5 + n) / 6)^\u03bb, n the line's length in characters; hover over a node for its numbers.");
    }
    return function () { reset(); };
  }

  X.register("beam", beamExplorer);
})();
