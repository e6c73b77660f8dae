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
     the bars     the median milliseconds per character of each, and the ratio of the two
                  medians, named as such
     the summary  the median of the paired ratios, their range and how many pairs
                  speculative decoding won, the characters per pass of the target and the
                  acceptance, and what ran them: one WebAssembly thread

   The two ratios can point different ways when there are few pairs. Only where both say the
   same does the summary name a winner; otherwise it calls the result mixed (tally).

   Both write text with the target's distribution; at temperature 0 the two texts are the
   same. The root's data-race holds the results, as JSON. */
(function () {
  "use strict";
  if (!window.slmExplorers) return;  // slm_explorers.js reports a missing runtime
  var U = window.slmExplorers.util, el = U.el, STYLE = U.style;
  var C = { plain: STYLE.colours.blue, spec: STYLE.colours.orange, faint: STYLE.faint_ink };
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
      look: "more characters per pass than at gamma 3, but each pass of the target reads 9 positions. " +
            "Which setting wins in your browser?" }];

  function median(xs) {
    var s = xs.slice().sort(function (a, b) { return a - b; }), h = s.length >> 1;
    return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
  }

  /* Which way a ratio (plain time over speculative time) points, read at the two decimals
     the page shows it with: 1 speculative decoding faster, -1 slower, 0 level. */
  function direction(ratio) {
    var shown = +ratio.toFixed(2);
    return shown > 1 ? 1 : shown < 1 ? -1 : 0;
  }

  /* What the pairs say: the median of the paired ratios and their range, how many pairs
     speculative decoding won, each side's median milliseconds per character and the ratio
     of those two medians. The verdict names a side only where both ratios point to it:
     "speculative", "plain", or else "mixed". */
  function tally(results) {
    var ratios = results.map(function (r) { return r.ratio; });
    var t = { count: results.length, median: median(ratios),
              low: Math.min.apply(null, ratios), high: Math.max.apply(null, ratios),
              wins: ratios.filter(function (x) { return direction(x) > 0; }).length,
              plainMs: median(results.map(function (r) { return r.plain_ms; })),
              specMs: median(results.map(function (r) { return r.spec_ms; })) };
    t.medianRatio = t.plainMs / t.specMs;
    var a = direction(t.median), b = direction(t.medianRatio);
    t.verdict = a !== b || a === 0 ? "mixed" : a > 0 ? "speculative" : "plain";
    return t;
  }

  /* The summary's first sentence: the verdict, from the median of the paired ratios and the
     count of pairs won; where the medians of time per character disagree, "mixed". */
  function headline(t) {
    var ratio = t.count > 1 ? "the median of the " + t.count + " paired ratios" : "the one pair's ratio";
    var won = t.count > 1 ? "faster in " + t.wins + " of " + t.count + " pairs" : "";
    if (t.verdict === "speculative") {
      return "Speculative decoding ran " + t.median.toFixed(2) + " times as fast as plain decoding, by " +
             ratio + (won && "; it was " + won) + ".";
    }
    if (t.verdict === "plain") {
      return "Plain decoding was faster: " + ratio + " is " + t.median.toFixed(2) +
             (won && ", and speculative decoding was " + won) + ".";
    }
    var bars = direction(t.medianRatio), level = bars === 0 && direction(t.median) === 0;
    return (level ? "No winner: " : "Mixed result, no winner: ") + ratio + " is " + t.median.toFixed(2) +
           (won && ", speculative decoding was " + won) + ", and the median times per character put it " +
           (bars > 0 ? "faster" : bars < 0 ? "slower" : "level") + " (ratio " + t.medianRatio.toFixed(2) + ").";
  }

  /* The summary's rest: what a paired ratio is, the range, the target's characters per
     pass, the acceptance, what ran the race, and whether the two texts were the same. */
  function details(t, results) {
    var rounds = 0, chars = 0, accepted = 0, proposed = 0, cores = navigator.hardwareConcurrency;
    results.forEach(function (r) { rounds += r.rounds; chars += r.chars; accepted += r.accepted; proposed += r.proposed; });
    var same = results.every(function (r) { return r.plain_text === r.spec_text; });
    return { charsPerPass: chars / rounds, acceptance: proposed ? accepted / proposed : 0, text:
      " A pair's ratio is its plain time per character over its speculative time (above 1: speculative " +
      "decoding was faster)" + (t.count > 1 ? "; the " + t.count + " ratios ran from " + t.low.toFixed(2) +
      " to " + t.high.toFixed(2) : "") + ". The target made " + (chars / rounds).toFixed(2) +
      " characters per pass; acceptance \u03b1 = " +
      (proposed ? (100 * accepted / proposed).toFixed(1) + "%" : "none tested") +
      ". Measured in this browser, on one WebAssembly thread" +
      (cores ? " (this device reports " + cores + " logical cores)" : "") + "." +
      (same ? " In every pair the two runs wrote the same text." : "") };
  }

  /* The controls: temperature, gamma, characters per run, pairs and the first seed. */
  function controls(ui, m) {
    var c = { inputs: { temperature: U.slider(ui, U.RULE_INPUTS[0], m) } };
    c.gamma = U.gammaSlider(ui, m, 3);
    c.length = U.lengthBox(ui, "characters per run", 200, MAX_LENGTH);
    c.pairs = U.box(ui, "pairs", "pairs", 5, { min: 1, max: MAX_PAIRS, step: 1 },
                    "how many pairs of runs to time, one plain and one speculative in each");
    c.seed = U.seedBox(ui);
    ui.sample.textContent = "Race";
    ui.sample.title = "time plain and speculative decoding side by side, pair after pair";
    ui.cont.style.display = "none";  // each race stands alone
    return c;
  }

  /* The controls' values, checked; throws the reader's error. */
  function settings(c) {
    var a = { s: U.settingsOf(c.inputs), n: U.count(c.length, 1), count: U.count(c.pairs, 1), gamma: +c.gamma.value };
    if (a.count > MAX_PAIRS) {
      throw new Error("pairs=" + a.count + " is invalid: pairs must be at most " + MAX_PAIRS + " (each pair runs twice)");
    }
    if (a.n > MAX_LENGTH) {
      throw new Error("length=" + a.n + " is invalid: at most " + MAX_LENGTH + " characters per run");
    }
    a.first = U.count(c.seed, 0);
    window.slm.decoding.config(a.s);
    return a;
  }

  function view(ui) {
    ui.table = el("table", { class: "slm-race-table", style: "border-collapse:collapse;font-size:13px;" +
                             "font-family:monospace;margin:.3em 0" }, ui.view);
    el("div", { style: "font-size:13px;color:" + C.faint }, ui.view,
       "Milliseconds a character; ratio: plain time over speculative time (above 1, speculative decoding was faster).");
    ui.bars = el("div", { class: "slm-race-bars", style: "margin:.4em 0;font-size:13px" }, ui.view);
    ui.summary = el("div", { class: "slm-race-summary", style: "font-size:13px;margin:.3em 0" }, ui.view);
    ui.caption = el("div", { class: "slm-race-caption", style: "font-size:13px;margin:.3em 0 0;color:" + C.faint }, ui.view);
  }
  function header(ui) {
    ui.table.textContent = "";
    var tr = el("tr", {}, ui.table);
    ["pair", "plain", "speculative", "ratio"].forEach(function (h) {
      el("th", { style: "text-align:right;padding:0 .8em;font-weight:normal;color:" + C.faint }, tr, h);
    });
  }
  function row(ui, r) {
    var tr = el("tr", { class: "slm-race-row" }, ui.table);
    [String(r.pair), r.plain_ms.toFixed(3), r.spec_ms.toFixed(3), r.ratio.toFixed(2)]
      .forEach(function (v) { el("td", { style: "text-align:right;padding:0 .8em" }, tr, v); });
  }

  /* The bars: each side's median milliseconds per character, under a line that says so and
     gives the ratio of the two medians. */
  function bars(ui, t, draftName) {
    ui.bars.textContent = "";
    var runs = t.count > 1 ? ", over the " + t.count + " runs of each" : "";
    el("div", { class: "slm-race-bars-note", style: "color:" + C.faint }, ui.bars,
       "Median time per character" + runs + "; their ratio, plain over speculative: " +
       t.medianRatio.toFixed(2));
    var most = Math.max(t.plainMs, t.specMs);
    [["plain decoding", t.plainMs, C.plain, "plain"],
     ["speculative, " + draftName + " draft", t.specMs, C.spec, "speculative"]].forEach(function (b) {
      var line = el("div", { style: "display:flex;align-items:center;gap:.5em;margin:.15em 0" }, ui.bars);
      el("span", { style: "min-width:13em" }, line, b[0]);
      el("span", { class: "slm-race-bar", "data-what": b[3], style: "display:inline-block;height:14px;background:" +
                   b[2] + ";width:" + (240 * b[1] / most).toFixed(1) + "px" }, line);
      el("span", { style: "font-family:monospace;white-space:nowrap" }, line, b[1].toFixed(3) + " ms");
    });
  }
  function texts(ui, context, r) {
    ui.caption.textContent = "Below, the texts of pair " + r.pair + " (seed " + r.seed + "), after your context:";
    U.showContext(ui, context, 120);
    [["plain decoding: ", r.plain_text, C.plain], ["speculative decoding: ", r.spec_text, C.spec]].forEach(function (t) {
      el("div", { style: "margin-top:.3em;color:" + t[2] + ";font-weight:bold" }, ui.output, t[0]);
      U.showNew(ui, t[1]);
    });
  }

  /* Once every pair has run: the bars, the summary, and the results on the root. */
  function finish(ui, a, results, draftName) {
    var t = tally(results), d = details(t, results);
    bars(ui, t, draftName);
    ui.summary.textContent = "";
    el("b", {}, ui.summary, headline(t));
    ui.summary.appendChild(document.createTextNode(d.text));
    var out = { draft: draftName, gamma: a.gamma, length: a.n, temperature: a.s.temperature, median: t.median,
                pairs: results, plain_ms: t.plainMs, spec_ms: t.specMs, median_ratio: t.medianRatio,
                wins: t.wins, verdict: t.verdict, chars_per_pass: d.charsPerPass, acceptance: d.acceptance };
    ui.root.setAttribute("data-race", JSON.stringify(out));
    ui.root.setAttribute("data-state", a.count + " pairs of " + a.n + ", seed " + a.first);
    U.ok(ui, a.count + " pairs of " + a.n + " characters; seeds " + a.first + "\u2013" + (a.first + a.count - 1));
    U.busy(ui, false);
  }

  function race(ui, m) {
    var c = controls(ui, m);
    view(ui);
    function run() {
      U.busy(ui, true);
      ui.root.removeAttribute("data-race");  // the results on the root are those on screen
      var a, draftName;
      try { a = settings(c); } catch (e) { return Promise.resolve(U.fail(ui, e)); }
      var context = ui.context.value.slice(-m.config.block_size);
      header(ui);
      ui.bars.textContent = ui.summary.textContent = ui.caption.textContent = "";
      ui.view.style.display = "";
      U.progress(ui, "loading the n-gram draft and warming up\u2026");
      return window.slm.loadNgram().then(function (ng) {
        draftName = ng.name;
        return window.slm.race(context, a.n, a.gamma, a.s, a.first, a.count, WARM_UP, function (r) {
          U.progress(ui, "pair " + r.pair + " of " + a.count + " done\u2026");
          row(ui, r);
          texts(ui, context, r);
        });
      }).then(function (results) { finish(ui, a, results, draftName); })
        .catch(function (e) { U.fail(ui, e); });
    }
    ui.sample.onclick = run;
    U.presets(ui, PRESETS, run);
  }

  window.slmExplorers.register("race", race);
})();
