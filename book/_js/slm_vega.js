/* The kernel-free figures of the static site: every .slm-vega-figure on the page holds a
   Vega-Lite spec (a notebook output, see book/_ext/vega_figures.py), drawn here with the
   vendored vega-embed; its sliders are the spec's own inputs. Each figure is drawn as it
   nears the screen (below); Vega is loaded then, once, from _static/vega/ (make book copies
   it from npm), by a <script src>, so that the page works from file:// and offline. This
   file is also the site's one script loader: the live model (slm_runtime.js) and its
   explorers (slm_explorers.js), loaded after it, load theirs with slmVega.loadScript, and
   draw through slmVega.embed:

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

  /* The script at src (a URL, or a path under _static/), loaded once per page: Vega for
     the figures and the explorers, the live model's files. With RequireJS on the page, a
     UMD build such as Vega's would register as an AMD module, not as a global: with `umd`,
     define.amd is hidden while the script runs (load such scripts one after another). */
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
  /* The room the nearest shown ancestor of `element` gives it (px, inside its padding): an
     explorer may draw its chart hidden (display: none) before showing it. */
  function roomFor(element) {
    var box = element.parentElement;
    while (box && box.clientWidth === 0) box = box.parentElement;
    if (!box) return 0;
    var style = getComputedStyle(box);
    return box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  }
  /* How much wider the drawn chart is than its room. vega-embed makes `element` an inline
     block with the chart's SVG and room for its menu button; the chart's width is read from
     the SVG. */
  function excessWidth(element) {
    var svg = element.querySelector("svg"), room = roomFor(element);
    if (!svg || !room) return 0;
    var own = getComputedStyle(element);
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
  /* --- the height of a figure not drawn yet ----------------------------------------------
     From its spec, at the width it will be drawn at (narrowed as draw() will narrow it), as
     Vega lays out the book's charts (shakespeare_lm.site.figures): a title above it, then
     each view with its title, its legends above it, its x axis below it, and a caption that
     wraps onto more lines than its view has; then the sliders under the chart. A text that
     a slider picks from a list (figures.pick) counts as the middle one of their line
     counts, one that joins strings and such picks as a like text (joinedText), any other
     expression as one line. The sizes below are Vega's layout of the book's figures,
     measured at 1280 and 390 px; the estimate is within 20 px of the drawn figure there. */
  var MENU = 38;            // vega-embed's room for its menu button, right of the chart (px)
  var Y_AXIS = 48;          // a y axis: its labels and title, left of the views (px)
  var X_AXIS = 20;          // an x axis below a view: ticks and labels (px)
  var AXIS_TITLE = 16;      // an axis title under its labels (px)
  var ANGLED_LABELS = 45;   // what labels at an angle add (px; they are data, not in the spec)
  var TITLE_GAP = 14;       // a view's title and the view (its offset and the y axis' top label)
  var LEGEND_ROW = 15;      // an entry of a legend, a row of them, or its title (px)
  var LEGEND_GAP = 18;      // a legend and what it stands above (Vega's legend offset, px)
  var LEGEND_CHANNELS = ["color", "fill", "stroke", "shape", "strokeDash", "size", "opacity"];
  var BIND_ROW = 23;        // a slider's row, and its name's row on a phone (px)
  var BIND_GAP = 4.2, BIND_TOP = 7;  // between the sliders, above them (px: 0.3em, 0.5em)
  var BIND_EM = 7.7;        // a character of a slider's name or option (14 px text)
  var BIND_NAME = 12 * 14;  // a slider's name beside it, at least (px: 12em, slm_vega.css)
  var RADIO = 21, RADIO_GAP = 12.6;  // a radio button beside its option, between options (px)

  /* An expression's parts joined by + outside brackets and strings, and where its first
     bracket closes (-1: none). */
  function scan(expr) {
    var depth = 0, quote = null, cuts = [-1], first = -1;
    for (var i = 0; i < expr.length; i += 1) {
      var c = expr[i];
      if (quote) { if (c === "\\") i += 1; else if (c === quote) quote = null; }
      else if (c === '"' || c === "'") quote = c;
      else if ("([{".indexOf(c) >= 0) depth += 1;
      else if (")]}".indexOf(c) >= 0) { depth -= 1; if (depth === 0 && first < 0) first = i; }
      else if (c === "+" && depth === 0) cuts.push(i);
    }
    cuts.push(expr.length);
    var parts = cuts.slice(1).map(function (end, k) {
      return expr.slice(cuts[k] + 1, end).trim();
    });
    return { parts: parts, first: first };
  }
  /* The list an expression `[...][index]` picks from (figures.pick), or null. */
  function pickedList(expr) {
    var end = scan(expr).first, rest = expr.slice(end + 1).trim();
    if (expr[0] !== "[" || rest[0] !== "[" || scan(rest).first !== rest.length - 1) return null;
    try { return JSON.parse(expr.slice(0, end + 1)); } catch { return null; }
  }
  /* A text like the one an expression joining strings shows: each string as it is, each
     list picked from by its middle one in length, anything else (a number) 5 characters. */
  function joinedText(expr) {
    var parts = scan(expr).parts;
    if (parts.length < 2) return null;
    return parts.map(function (part) {
      var list = pickedList(part), quoted = /^(["'])(.*)\1$/.exec(part);
      if (quoted) return quoted[2];
      if (!list) return "00000";
      list = list.map(String).sort(function (a, b) { return a.length - b.length; });
      return list[Math.floor(list.length / 2)];
    }).join("");
  }
  /* The texts `text` may show: a string or lines, or what an expression picks from or
     joins; null for any other expression and for none. */
  function textOptions(text) {
    if (text === undefined || text === null) return null;
    if (text.expr === undefined) return [text];
    var expr = text.expr.trim(), joined = joinedText(expr);
    return pickedList(expr) || (joined === null ? null : [joined]);
  }
  function lineCount(options, chars, before) {  // the middle one of the options' line counts
    var counts = options.map(function (text) { return wrapLines(text, chars, before).length; });
    return counts.sort(function (a, b) { return a - b; })[Math.floor(counts.length / 2)];
  }
  /* A title's height, its lines wrapped to `width` px where the chart is narrowed (wrapTitle);
     Vega puts a text's lines its font size + 2 px apart. */
  function titleHeight(title, width, size, narrow) {
    var params = title && title.text !== undefined ? title : { text: title };
    if (params.text === undefined || params.text === null || params.text === "") return 0;
    size = fontSize(params, size);
    var chars = narrow ? Math.floor(width / (TEXT_EM * size)) : Infinity;
    return lineCount(textOptions(params.text) || [""], chars, 0) * (size + 2) - 2;
  }
  /* How far a caption (a text mark with a lineHeight: figures.caption_view, its view 4 px
     taller than its lines) runs below its view once wrapped to `width` px from the `old`
     width it was written for. A caption drawn from a data field is taken as lines that
     filled the old width. */
  function captionOverflow(view, unit, old, width) {
    var mark = unit.mark, text = (unit.encoding || {}).text || {};
    var em = MONO_EM * fontSize(mark, 12), before = Math.floor(old / em);
    var chars = width < old ? Math.floor(width / em) : Infinity;
    var options = textOptions(mark.text !== undefined ? mark.text : text.value);
    var written = Math.round((view.height - 4) / mark.lineHeight);
    var lines = options ? lineCount(options, chars, before) :
      Math.round(written * Math.max(1, before / chars));
    return Math.max(0, lines * mark.lineHeight - 3 - view.height);
  }
  function units(view) { return view.layer || [view]; }
  /* A legend's height: a row of its entries (its title beside them), or, on a narrowed
     chart (config.legend: vertical, title on top), a column of them under its title. */
  function legendHeight(enc, narrow) {
    var listed = (enc.scale || {}).domain || (Array.isArray(enc.sort) && enc.sort) || [0, 1];
    var entries = listed.length;
    var row = Math.max(LEGEND_ROW, Math.sqrt((enc.legend || {}).symbolSize || 0) - 1);
    return LEGEND_GAP + (narrow ? row * entries + (enc.title === null ? 0 : LEGEND_ROW) : row);
  }
  /* The legends of `views`: `shared` (those not resolved independent: one for the whole
     chart, above it) or each view's own (above it). */
  function legendsHeight(views, resolve, shared, narrow) {
    var seen = {}, height = 0;
    [].concat.apply([], views.map(units)).forEach(function (unit) {
      LEGEND_CHANNELS.forEach(function (channel) {
        var enc = (unit.encoding || {})[channel];
        if (!enc || !enc.field || enc.legend === null || enc.scale === null || seen[channel] ||
            (resolve[channel] !== "independent") !== shared) return;
        seen[channel] = true;
        height += legendHeight(enc, narrow);
      });
    });
    return height;
  }
  /* An x axis under a view: its labels (none where `labels` is false), at an angle or not,
     and its title (the field's name where none is given). */
  function axisHeight(view) {
    var x = units(view).map(function (unit) { return (unit.encoding || {}).x; })
      .filter(function (e) { return e && e.field && e.axis !== null; })[0];
    if (!x || (x.axis || {}).labels === false) return 0;
    var angled = (x.axis || {}).labelAngle ? ANGLED_LABELS : 0;
    return X_AXIS + (x.title === null ? 0 : AXIS_TITLE) + angled;
  }
  /* One view as drawn (`view`: its height and width in the narrowed spec) with what stands
     above and below it; `own` is the same view in the figure's spec, its texts as written. */
  function viewHeight(view, own, resolve, config) {
    var narrow = view.width < own.width;
    var title = titleHeight(own.title, view.width, fontSize(config.title, 13), narrow);
    var height = view.height + (title && title + TITLE_GAP) + axisHeight(own);
    height += legendsHeight([own], resolve, false, narrow);
    units(own).forEach(function (unit) {
      var mark = unit.mark;
      if (mark && mark.type === "text" && mark.lineHeight) {
        height += captionOverflow(own, unit, own.width, view.width);
      }
    });
    return height;
  }
  /* The drawn chart's height (its SVG), where `room` px are left for it. */
  function chartHeight(spec, room) {
    var config = spec.config || {}, pad = typeof config.padding === "number" ? config.padding : 5;
    var views = spec.vconcat || [spec], resolve = (spec.resolve || {}).legend || {};
    var widest = Math.max.apply(null, views.map(function (v) { return v.width || 0; }));
    var excess = widest + Y_AXIS + 2 * pad + MENU - room;
    var shown = (excess > 0 && narrowed(spec, excess + SLACK)) || spec, narrow = shown !== spec;
    var drawn = shown.vconcat || [shown], offset = (config.title || {}).offset;
    var title = titleHeight(spec.title, drawn[0].width + 50, fontSize(config.title, 15), narrow);
    var height = 2 * pad + (title && title + (typeof offset === "number" ? offset : 4)) +
      (views.length - 1) * (typeof spec.spacing === "number" ? spec.spacing : 20);
    height += legendsHeight(views, resolve, true, narrow);
    views.forEach(function (own, i) { height += viewHeight(drawn[i], own, resolve, config); });
    return height;
  }
  /* The sliders under the chart (vega-embed's bindings, slm_vega.css): a row each, their
     names on a row of their own on a phone; radio buttons that do not fit on one row wrap. */
  function bindingsHeight(spec, room) {
    var phone = window.matchMedia && window.matchMedia("(max-width: 600px)").matches;
    var binds = (spec.params || []).filter(function (p) { return p.bind && p.bind.input; });
    if (!binds.length) return 0;
    var rows = 0;
    binds.forEach(function (param) {
      var name = (param.bind.name || param.name).length * BIND_EM;
      var line = room - BIND_TOP - (phone ? 0 : Math.max(BIND_NAME, name));
      rows += (phone ? 1 : 0) + inputRows(param.bind, line, room - BIND_TOP);
    });
    return BIND_TOP + rows * BIND_ROW + (binds.length - 1) * BIND_GAP;
  }
  /* The rows an input takes: one, or its radio buttons wrapped (a row of options that does
     not fit beside its name starts on the next line, `width` px wide). */
  function inputRows(bind, beside, width) {
    if (bind.input !== "radio") return 1;
    var sizes = (bind.labels || bind.options || []).map(function (label) {
      return String(label).length * BIND_EM + RADIO;
    });
    var total = sizes.reduce(function (a, b) { return a + b + RADIO_GAP; }, -RADIO_GAP);
    if (total <= beside) return 1;
    var rows = 1, x = 0;
    sizes.forEach(function (size) {
      if (x > 0 && x + size > width) { rows += 1; x = 0; }
      x += size + RADIO_GAP;
    });
    return rows + (beside < width ? 1 : 0);
  }
  function estimatedHeight(spec, room) {  // 0 for a spec unlike the book's (no view height)
    var height = Math.round(chartHeight(spec, room) + bindingsHeight(spec, room));
    return isFinite(height) ? height : 0;
  }

  /* --- a figure drawn as it nears the screen ----------------------------------------------
     Vega (0.83 MB) loads when the first figure comes within a screen of the viewport (a
     figure in the first screen: at once), so that a page opened and left unread stays light
     (tests/browser/test_page_weight.py). Until it is drawn, a figure keeps the height it will
     have (estimatedHeight, above), so that the page does not jump. */
  var waiting = new Map(), nearby = null;  // each figure not drawn yet: {draw, reserve}
  function drawWhenNear(root, draw, reserve) {
    reserve();
    if (!window.IntersectionObserver) { draw(); return; }
    nearby = nearby || new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (entry.isIntersecting && waiting.has(entry.target)) drawNow(entry.target);
      });
    }, { rootMargin: "100% 0px" });  // one screen above and below it
    waiting.set(root, { draw: draw, reserve: reserve });
    nearby.observe(root);
  }
  function drawNow(root) {
    var draw = waiting.get(root).draw;
    waiting.delete(root);
    nearby.unobserve(root);
    draw();
  }
  function mount(root) {
    if (root.getAttribute("data-state")) return;
    root.setAttribute("data-state", "loading");
    var spec = JSON.parse(root.querySelector("script[type='" + MIME + "']").textContent);
    var view = root.querySelector(".slm-vega-view");
    function done(state) {  // drawn or failed: the figure takes its own height
      root.style.minHeight = "";
      root.setAttribute("data-state", state);
    }
    drawWhenNear(root, function () {
      embed(view, spec).then(function (drawn) {
        root.slmView = drawn;
        // in a notebook page the arrow keys would otherwise also scroll or move between cells
        root.addEventListener("keydown", function (e) { if (e.target.tagName === "INPUT") e.stopPropagation(); });
        done("drawn");
      }).catch(function (e) {
        view.textContent = "This figure could not be drawn: " + e.message;
        done("failed");
        if (window.console) console.error("kernel-free figure failed to draw:", e);
      });
    }, function () { root.style.minHeight = estimatedHeight(spec, roomFor(view)) + "px"; });
  }
  function mountAll() { document.querySelectorAll(".slm-vega-figure").forEach(mount); }
  // a page printed shows every figure: those not drawn yet start now (for a second print)
  window.addEventListener("beforeprint", function () {
    waiting.forEach(function (w, root) { drawNow(root); });
  });
  // a window resized (a phone turned): each figure not drawn yet keeps its height at the new width
  var resized = null;
  window.addEventListener("resize", function () {
    clearTimeout(resized);
    resized = setTimeout(function () { waiting.forEach(function (w) { w.reserve(); }); }, 200);
  });
  window.slmVega = { embed: embed, mount: mount, mountAll: mountAll, loadScript: loadScript };
  Object.defineProperty(window.slmVega, "ready", { enumerable: true, get: ready });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
  else mountAll();
})();
