/* The kernel-free figures of the static site: every .slm-vega-figure on the page holds a
   Vega-Lite spec (a notebook output, see book/_ext/vega_figures.py), drawn here with the
   vendored vega-embed; its sliders are the spec's own inputs. Vega is loaded once, from
   _static/vega/ (make book copies it from npm), by a <script src>, so that the page works
   from file:// and offline. This file is also the site's one script loader: the live model
   (slm_runtime.js) and its explorers (slm_explorers.js), loaded after it, load theirs with
   slmVega.loadScript, and draw through slmVega.embed:

     slmVega.ready                      // Promise: vega, vega-lite and vega-embed are loaded
                                        // (reading it loads them; embed does)
     slmVega.embed(element, spec, data) // Promise of the Vega view drawn in element; data
                                        // (optional), {dataset name: rows}, is in it from
                                        // the start (a chart drawn empty and filled after
                                        // makes Vega warn "Infinite extent")
     slmVega.loadScript(src)            // Promise: the script at src (a URL, or a path
                                        // under _static/) has run; each src loads once

   A chart wider than its place on the page (a phone: the column is about 360 px, a figure
   680) is drawn again, narrower (fitted, below), rather than scrolled sideways. */
(function () {
  "use strict";
  if (window.slmVega) { window.slmVega.mountAll(); return; }
  var me = document.currentScript.src, BASE = me.substring(0, me.lastIndexOf("/") + 1);
  var FILES = ["vega/vega.min.js", "vega/vega-lite.min.js", "vega/vega-embed.min.js"];
  var MIME = "application/vnd.vegalite.v5+json";

  /* The script at src (a URL, or a path under _static/), loaded once per page. Pages with
     figures load Vega with <script> tags before RequireJS (vega_figures.py); a page that
     only has a live explorer loads it here. With RequireJS on the page, a UMD build such
     as Vega's would register as an AMD module, not as a global: with `umd`, define.amd is
     hidden while the script runs (load such scripts one after another). */
  var scripts = {};
  function loadScript(src, umd) {
    var url = new URL(src, BASE).href;
    if (!scripts[url]) scripts[url] = new Promise(function (resolve, reject) {
      var s = document.createElement("script"), amd = umd && window.define && window.define.amd;
      function restore() { if (amd) window.define.amd = amd; }
      s.src = url;
      s.onload = function () { restore(); resolve(); };
      s.onerror = function () {
        restore();
        reject(new Error("could not load " + url + ": build the site with `make book`"));
      };
      if (amd) window.define.amd = undefined;
      document.head.appendChild(s);
    });
    return scripts[url];
  }
  /* Vega, loaded when something is first drawn (a page's figure; an explorer's chart, once
     the reader reaches it): a Promise, also slmVega.ready (reading it loads Vega). */
  var loaded = null;
  function ready() {
    if (!loaded) loaded = (window.vegaEmbed ? Promise.resolve() : FILES.reduce(function (chain, f) {
      return chain.then(function () { return loadScript(f, true); });
    }, Promise.resolve())).then(function () { window.vega.expressionFunction("slmWrap", wrapLines); });
    return loaded;
  }

  /* --- fitting a chart to its column -------------------------------------------------------
     The book's charts are Vega-Lite views of a fixed width (shakespeare_lm.site.figures), most
     of them stacked (vconcat). Where the drawn chart is wider than its element, each view is
     made narrower by the excess and drawn again: a mark placed at the view's right edge moves
     with it, and the monospace captions and the titles are wrapped again to the new width
     (slmWrap, a Vega expression function, since a caption may be a data field or an
     expression of the sliders). Text keeps its size. */
  var MIN_WIDTH = 160;   // a view is never made narrower than this (px)
  var SLACK = 24;        // a narrowed chart leaves this much room (px): its axes' labels may
                         // grow when a slider moves or an explorer puts its data in
  var MONO_EM = 0.6;     // a monospace character's width in ems (figures.wrap_lines uses it too)
  var TEXT_EM = 0.55;    // a proportional character's width in ems, generously

  /* `value` (a string, or lines) as lines of at most `chars` characters. Lines that
     figures.wrap_lines broke at a space for the old width (`before` characters: a line near
     that long, with a space at the break; 0: none) are joined again first; a word longer
     than a line is cut. `upward`: the lines last to first (see wrapText). */
  function wrapLines(value, chars, before, upward) {
    var lines = [].concat(value === null || value === undefined ? "" : value)
      .join("\n").split("\n"), joined = [];
    lines.forEach(function (line, i) {
      var last = joined.length - 1;
      var broken = i > 0 && before > 0 && lines[i - 1].length >= 0.75 * before &&
        (/ $/.test(lines[i - 1]) || /^ /.test(line));
      if (broken) joined[last] += line; else joined.push(line);
    });
    var out = [];
    joined.forEach(function (line) {
      var words = line.match(/[^ ]+ *| +/g) || [""], row = "";
      words.forEach(function (word) {
        if (row && (row + word).trimEnd().length > chars) { out.push(row); row = ""; }
        for (; word.trimEnd().length > chars; word = word.slice(chars)) out.push(word.slice(0, chars));
        row += word;
      });
      out.push(row);
    });
    return upward ? out.reverse() : out;
  }
  function wrapCall(expr, chars, before, upward) {  // a Vega expression of the wrapped lines
    return "slmWrap(" + expr + ", " + chars + ", " + before + ", " + !!upward + ")";
  }
  function wrapped(text, chars, before, upward) {  // a text or title's `text`, wrapped by Vega
    var expr = text && text.expr !== undefined ? "(" + text.expr + ")" : JSON.stringify(text);
    return { expr: wrapCall(expr, chars, before, upward) };
  }
  function fontSize(part, fallback) {
    return (part && typeof part.fontSize === "number") ? part.fontSize : fallback;
  }
  /* A text mark's text wrapped to `width` px: a caption (a mark with a lineHeight:
     figures.caption_view) and a label alike; a number with a format is left as it is. Vega
     puts a text's further lines below its first, whatever its baseline: a label that stands
     on its baseline (above a rule, say) gets its lines last to first and a negative line
     height, so that they stack upwards from where its one line stood. */
  function wrapText(unit, width, oldWidth, config) {
    var mark = unit.mark, size = fontSize(mark, fontSize(config.text, 12));
    var em = (/mono/i.test(mark.font || "") ? MONO_EM : TEXT_EM) * size;
    var chars = Math.floor(width / em), before = mark.lineHeight ? Math.floor(oldWidth / em) : 0;
    var upward = /bottom/.test(mark.baseline || "") && !mark.lineHeight;
    if (upward) mark.lineHeight = -Math.ceil(1.2 * size);
    rewrite(unit, function (text) { return wrapped(text, chars, before, upward); },
            function (expr) { return wrapCall(expr, chars, before, upward); });
  }
  /* A text mark's text replaced: `value` maps a text given in the spec (the mark's, or the
     encoding's value) to its new one, `expr` a Vega expression of a data field's text. */
  function rewrite(unit, value, expr) {
    var mark = unit.mark, text = (unit.encoding || {}).text;
    if (mark.text !== undefined) mark.text = value(mark.text);
    else if (text && text.value !== undefined) text.value = value(text.value);
    else if (text && text.field && !text.format && text.type !== "quantitative") {
      unit.transform = (unit.transform || []).concat({
        calculate: expr("datum[" + JSON.stringify(text.field) + "]"), as: "slm_wrapped" });
      unit.encoding.text = { field: "slm_wrapped", type: "nominal" };
    }
  }
  function wrapTitle(view, width, size) {
    var params = view.title && view.title.text !== undefined ? view.title : { text: view.title };
    if (params.text === undefined || params.text === null || params.text === "") return;
    var chars = Math.floor(width / (TEXT_EM * fontSize(params, size)));
    view.title = Object.assign({}, params, { text: wrapped(params.text, chars, 0) });
  }
  /* A row of labels at fixed places (a legend drawn as text marks: roofline_charts.py) flows
     onto more rows where the view is too narrow for it; the view grows by those rows. */
  function flowLabels(view, width, config) {
    var labels = (view.layer || []).filter(function (unit) {
      var m = unit.mark;
      return m && m.type === "text" && typeof m.x === "number" && typeof m.y === "number" &&
        typeof m.text === "string" && !(unit.encoding || {}).x;
    }).sort(function (a, b) { return a.mark.x - b.mark.x; });
    var x = 0, rows = 0, size = 12;
    labels.forEach(function (unit) {
      size = fontSize(unit.mark, fontSize(config.text, 12));
      var w = unit.mark.text.length * TEXT_EM * size;
      if (x > 0 && x + w > width) { rows += 1; x = 0; }
      unit.mark.x = x;
      unit.mark.y += rows * Math.ceil(1.4 * size);
      x += w + size;
    });
    if (rows && typeof view.height === "number") view.height += rows * Math.ceil(1.4 * size);
    return labels;
  }
  /* One view (a unit or a layer) made `width` px wide instead of its own width. */
  function narrowView(view, width, config) {
    var old = view.width, placed = flowLabels(view, width, config);
    view.width = width;
    wrapTitle(view, width, fontSize(config.title, 13));
    (view.layer || [view]).forEach(function (unit) {
      var mark = unit.mark;
      if (!mark || typeof mark !== "object" || placed.indexOf(unit) >= 0) return;
      if (mark.x === old) mark.x = "width";  // at the right edge (roofline_charts.py)
      if (mark.type === "text") wrapText(unit, width, old, config);
      var axis = unit.encoding && unit.encoding.x && unit.encoding.x.axis;
      if (axis && axis.labelOverlap === false) axis.labelOverlap = "greedy";  // a label per bar
    });
  }
  /* A copy of `spec` whose views are `excess` px narrower; null if none can be. Legends stand
     in a column, and x-axis labels that would overlap are left out (each view's too). */
  function narrowed(spec, excess) {
    var copy = JSON.parse(JSON.stringify(spec)), config = copy.config = copy.config || {};
    var changed = false;
    (copy.vconcat || [copy]).forEach(function (view) {
      if (typeof view.width !== "number") return;
      var width = Math.max(MIN_WIDTH, Math.floor(view.width - excess));
      if (width >= view.width) return;
      narrowView(view, width, config);
      changed = true;
    });
    if (!changed) return null;
    // the figure's title spans the views and their y axes
    if (copy.vconcat && copy.title) wrapTitle(copy, copy.vconcat[0].width + 50, fontSize(config.title, 15));
    config.legend = Object.assign({}, config.legend, { direction: "vertical", titleOrient: "top" });
    config.axisX = Object.assign({ labelOverlap: true }, config.axisX);
    return copy;
  }

  var OPTIONS = { renderer: "svg" };
  // the spec's usermeta.embedOptions hide the link to the online editor: nothing leaves the page
  /* vega-embed's menu (save as SVG or PNG) opens from a <summary> that shows only an icon: it
     is named by what the menu holds. */
  function nameActions(element) {
    var summary = element.querySelector(".vega-actions") &&
      element.querySelector("details > summary");
    if (!summary) return;
    var items = Array.prototype.map.call(element.querySelectorAll(".vega-actions a"),
                                         function (a) { return a.textContent.trim(); });
    summary.setAttribute("aria-label", "Figure menu: " + items.join(", "));
  }
  /* How much wider the drawn chart is than the room its parent gives it. vega-embed makes
     `element` an inline block with the chart's SVG and room for its menu button; an explorer
     may draw its chart hidden (display: none) before showing it, so the chart's width is
     read from the SVG, the room from the nearest ancestor that is shown. */
  function excessWidth(element) {
    var svg = element.querySelector("svg"), box = element.parentElement;
    while (box && box.clientWidth === 0) box = box.parentElement;
    if (!svg || !box) return 0;
    var own = getComputedStyle(element), style = getComputedStyle(box);
    var room = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    var width = parseFloat(svg.getAttribute("width")) + parseFloat(own.paddingLeft) +
      parseFloat(own.paddingRight);
    return Math.ceil(width - room);
  }
  /* Draw `spec` in `element`; while it comes out wider than its room, draw it again, narrower
     by the excesses so far (at most three times, and only while the excess shrinks: a long
     label may not shrink with the views). `fit`: {shown (the spec drawn), total, last, tries}. */
  function draw(element, spec, fit) {
    return window.vegaEmbed(element, fit.shown, OPTIONS).then(function (result) {
      nameActions(element);
      var excess = excessWidth(element), total = fit.total + excess + SLACK;
      var next = excess > 0 && excess < fit.last && fit.tries < 3 && narrowed(spec, total);
      if (!next) return result.view;
      result.finalize();
      return draw(element, spec, { shown: next, total: total, last: excess, tries: fit.tries + 1 });
    });
  }
  function embed(element, spec, data) {
    if (data) spec = Object.assign({}, spec, { datasets: Object.assign({}, spec.datasets, data) });
    return ready().then(function () {
      return draw(element, spec, { shown: spec, total: 0, last: Infinity, tries: 0 });
    });
  }
  function mount(root) {
    if (root.getAttribute("data-state")) return;
    root.setAttribute("data-state", "loading");
    var spec = JSON.parse(root.querySelector("script[type='" + MIME + "']").textContent);
    embed(root.querySelector(".slm-vega-view"), spec).then(function (view) {
      root.slmView = view;
      // in a notebook page the arrow keys would otherwise also scroll or move between cells
      root.addEventListener("keydown", function (e) { if (e.target.tagName === "INPUT") e.stopPropagation(); });
      root.setAttribute("data-state", "drawn");
    }).catch(function (e) {
      root.setAttribute("data-state", "failed");
      root.querySelector(".slm-vega-view").textContent = "This figure could not be drawn: " + e.message;
      if (window.console) console.error("kernel-free figure failed to draw:", e);
    });
  }
  function mountAll() { document.querySelectorAll(".slm-vega-figure").forEach(mount); }
  window.slmVega = { embed: embed, mount: mount, mountAll: mountAll, loadScript: loadScript };
  Object.defineProperty(window.slmVega, "ready", { enumerable: true, get: ready });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
  else mountAll();
})();
