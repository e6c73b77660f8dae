/* The race (chapter 6, shakespeare_lm.site.live: live.explorer("race")): plain decoding against
   speculative decoding with the n-gram draft, both on the real model in the page
   (slm_runtime.js), timed in the reader's own browser.

     Race         times `pairs` pairs of runs, each writing `length` characters after the
                  reader's context (slm.race in slm_runtime.js): one run of plain decoding
                  and one of speculative decoding with the n-gram, the two in alternating
                  order, both with the pair's seed; one short run of each first, untimed,
                  loads the draft and warms the runtime
     the table    each pair's milliseconds per character, and its ratio, plain time over
                  speculative time (above 1: speculative decoding was faster)
     the bars     the median milliseconds per character of each
     the summary  the median of the ratios and their range, the characters per pass of the
                  main model and the acceptance, and what ran them: one WebAssembly thread

   Both write text with the main model's distribution; at temperature 0 the two texts are the
   same. The root's data-race holds the results, as JSON. */
(function () {
  "use strict";
  var X = window.slmExplorers;
  if (!X || window.slmRaceRegistered) return;  // slm_explorers.js reports a missing runtime
  window.slmRaceRegistered = true;
  var U = X.util, el = U.el;
  // shakespeare_lm.site.style: PALETTE (Okabe and Ito) and the inks
  var C = { plain: "#0072B2", spec: "#E69F00", ink: "#222222", faint: "#595959" };
  var MAX_PAIRS = 15, MAX_LENGTH = 1000, WARM_UP = 60;
  var START = "KATHARINA:\nMoved! in good time: let him that moved you ";
  var PRESETS = [
    { label: "the chapter's setting", context: START, settings: { gamma: 3, length: 200, pairs: 5 },
      sets: "gamma 3, temperature 1, 5 pairs of 200 characters",
      look: "the ratio in each pair: above 1, speculative decoding wrote its characters faster than plain decoding." },
    { label: "greedy", context: START, settings: { gamma: 3, length: 200, pairs: 3, temperature: 0 },
      sets: "the same at temperature 0, 3 pairs",
      look: "the two texts are the same, character for character: the draft changes how fast the text comes, " +
            "never what it is." },
    { label: "gamma 8", context: START, settings: { gamma: 8, length: 200, pairs: 5 },
      sets: "gamma 8, temperature 1, 5 pairs",
      look: "more characters per pass than at gamma 3, but each pass of the main model reads 9 positions. " +
            "Which setting wins in your browser?" }];

  function median(xs) {
    var s = xs.slice().sort(function (a, b) { return a - b; }), h = s.length >> 1;
    return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
  }

  function race(ui, m) {
    var inputs = { temperature: U.slider(ui, U.RULE_INPUTS[0], m) };
    var gamma = U.slider(ui, ["gamma", "gamma (proposals a round)", 1, 8, 1, null], m);
    gamma.value = 3;
    gamma.setAttribute("data-default", "3");
    gamma.dispatchEvent(new Event("input"));
    var length = U.lengthBox(ui, "characters per run", 200, MAX_LENGTH);
    var wrap = el("label", { style: "display:flex;gap:.35em;align-items:center",
                             title: "how many pairs of runs to time, one plain and one speculative in each" }, ui.options);
    el("span", {}, wrap, "pairs");
    var pairs = el("input", { type: "number", "data-name": "pairs", "data-default": "5", min: 1, max: MAX_PAIRS,
                              step: 1, style: "width:5.5em" }, wrap);
    pairs.value = 5;
    var seed = U.seedBox(ui);
    ui.sample.textContent = "Race";
    ui.sample.title = "time plain and speculative decoding side by side, pair after pair";
    ui.cont.style.display = "none";  // each race stands alone

    ui.table = el("table", { class: "slm-race-table", style: "border-collapse:collapse;font-size:13px;" +
                             "font-family:monospace;margin:.3em 0" }, ui.view);
    el("div", { style: "font-size:13px;color:" + C.faint }, ui.view,
       "Milliseconds a character; ratio: plain time over speculative time (above 1, speculative decoding was faster).");
    ui.bars = el("div", { class: "slm-race-bars", style: "margin:.4em 0;font-size:13px" }, ui.view);
    ui.summary = el("div", { class: "slm-race-summary", style: "font-size:13px;margin:.3em 0" }, ui.view);
    ui.caption = el("div", { class: "slm-race-caption", style: "font-size:13px;margin:.3em 0 0;color:" + C.faint }, ui.view);

    function header() {
      ui.table.textContent = "";
      var tr = el("tr", {}, ui.table);
      ["pair", "plain", "speculative", "ratio"].forEach(function (h) {
        el("th", { style: "text-align:right;padding:0 .8em;font-weight:normal;color:" + C.faint }, tr, h);
      });
    }
    function row(r) {
      var tr = el("tr", { class: "slm-race-row" }, ui.table);
      [String(r.pair), r.plain_ms.toFixed(3), r.spec_ms.toFixed(3), r.ratio.toFixed(2)]
        .forEach(function (v) { el("td", { style: "text-align:right;padding:0 .8em" }, tr, v); });
    }
    function bars(plainMs, specMs, draftName) {
      ui.bars.textContent = "";
      var most = Math.max(plainMs, specMs);
      [["plain decoding", plainMs, C.plain, "plain"], ["speculative, " + draftName + " draft", specMs, C.spec, "speculative"]]
        .forEach(function (b) {
          var line = el("div", { style: "display:flex;align-items:center;gap:.5em;margin:.15em 0" }, ui.bars);
          el("span", { style: "min-width:13em" }, line, b[0]);
          el("span", { class: "slm-race-bar", "data-what": b[3], style: "display:inline-block;height:14px;background:" +
                       b[2] + ";width:" + (240 * b[1] / most).toFixed(1) + "px" }, line);
          el("span", { style: "font-family:monospace;white-space:nowrap" }, line, b[1].toFixed(3) + " ms");
        });
    }
    function texts(context, r) {
      ui.output.textContent = "";
      ui.caption.textContent = "Below, the texts of pair " + r.pair + " (seed " + r.seed + "), after your context:";
      el("span", { style: "color:#888" }, ui.output, context.slice(-120));
      [["plain decoding: ", r.plain_text, C.plain], ["speculative decoding: ", r.spec_text, C.spec]].forEach(function (t) {
        el("div", { style: "margin-top:.3em;color:" + t[2] + ";font-weight:bold" }, ui.output, t[0]);
        el("span", { class: "slm-new", style: "font-weight:bold;background:#e3f0ff" }, ui.output, t[1]);
      });
    }
    function run() {
      U.busy(ui, true);
      ui.root.removeAttribute("data-race");  // the results on the root are those on screen
      var s, n, count, first, g = +gamma.value;
      try {
        s = U.settingsOf(inputs);
        n = U.count(length, 1);
        count = U.count(pairs, 1);
        if (count > MAX_PAIRS) {
          throw new Error("pairs=" + count + " is invalid: pairs must be at most " + MAX_PAIRS + " (each pair runs twice)");
        }
        if (n > MAX_LENGTH) {
          throw new Error("length=" + n + " is invalid: at most " + MAX_LENGTH + " characters per run");
        }
        first = U.count(seed, 0);
        window.slm.decoding.config(s);
      } catch (e) { return Promise.resolve(U.fail(ui, e)); }
      var context = ui.context.value.slice(-m.config.block_size);
      header();
      ui.bars.textContent = ui.summary.textContent = ui.caption.textContent = "";
      ui.view.style.display = "";
      U.progress(ui, "loading the n-gram draft and warming up\u2026");
      var draftName;
      return window.slm.loadNgram().then(function (ng) {
        draftName = ng.name;
        return window.slm.race(context, n, g, s, first, count, WARM_UP, function (r) {
          U.progress(ui, "pair " + r.pair + " of " + count + " done\u2026");
          row(r);
          texts(context, r);
        });
      }).then(function (results) {
        var ratios = results.map(function (r) { return r.ratio; });
        var mid = median(ratios), plainMs = median(results.map(function (r) { return r.plain_ms; }));
        var specMs = median(results.map(function (r) { return r.spec_ms; }));
        var rounds = 0, chars = 0, accepted = 0, proposed = 0;
        results.forEach(function (r) { rounds += r.rounds; chars += r.chars; accepted += r.accepted; proposed += r.proposed; });
        bars(plainMs, specMs, draftName);
        var cores = navigator.hardwareConcurrency;
        ui.summary.textContent = "";
        el("b", {}, ui.summary, "Speculative decoding ran " + mid.toFixed(2) + " times as fast as plain decoding");
        ui.summary.appendChild(document.createTextNode(
          " (the median of " + count + " paired ratios, from " + Math.min.apply(null, ratios).toFixed(2) + " to " +
          Math.max.apply(null, ratios).toFixed(2) + "). The main model made " + (chars / rounds).toFixed(2) +
          " characters per pass; acceptance \u03b1 = " + (proposed ? (100 * accepted / proposed).toFixed(1) + "%" : "none tested") +
          ". Measured in this browser, on one WebAssembly thread" +
          (cores ? " (this device reports " + cores + " logical cores)" : "") + "." +
          (results.every(function (r) { return r.plain_text === r.spec_text; }) ?
           " In every pair the two runs wrote the same text." : "")));
        var out = { draft: draftName, gamma: g, length: n, temperature: s.temperature, median: mid, pairs: results,
                    plain_ms: plainMs, spec_ms: specMs, chars_per_pass: chars / rounds,
                    acceptance: proposed ? accepted / proposed : 0 };
        ui.root.setAttribute("data-race", JSON.stringify(out));
        ui.root.setAttribute("data-state", count + " pairs of " + n + ", seed " + first);
        U.ok(ui, count + " pairs of " + n + " characters; seeds " + first + "\u2013" + (first + count - 1));
        U.busy(ui, false);
      }).catch(function (e) { U.fail(ui, e); });
    }
    ui.sample.onclick = run;
    U.presets(ui, PRESETS, run);
  }

  X.register("race", race);
})();
