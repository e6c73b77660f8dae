/* Kernel-free figures: draw a JSON chart spec as SVG and redraw it when a slider moves.
   Used by shakespeare_lm.figures; no dependencies, no network. Defined once per page. */
(function () {
  if (window.KernelFree) return;
  var NS = "http://www.w3.org/2000/svg";
  var PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];

  function el(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function text(parent, x, y, s, attrs) {
    var t = el("text", Object.assign({ x: x, y: y, "font-size": 11, fill: "#333" }, attrs || {}), parent);
    t.textContent = s;
    return t;
  }
  function fmt(v) {
    if (v === 0) return "0";
    var a = Math.abs(v);
    if (a >= 1e4 || a < 1e-3) return v.toExponential(0).replace("e+", "e");
    if (a >= 100) return v.toFixed(0);
    return String(Math.round(v * 1000) / 1000);
  }
  function niceTicks(lo, hi, n) {
    var span = hi - lo || 1, step = Math.pow(10, Math.floor(Math.log10(span / n)));
    var err = span / n / step;
    if (err >= 7.5) step *= 10; else if (err >= 3.5) step *= 5; else if (err >= 1.5) step *= 2;
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.round(v / step) * step);
    return out;
  }
  function logTicks(lo, hi) {
    var out = [];
    for (var e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      var v = Math.pow(10, e);
      if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v);
    }
    return out;
  }
  function extent(values, log) {
    var vs = values.filter(function (v) { return isFinite(v) && (!log || v > 0); });
    if (!vs.length) return [log ? 1 : 0, log ? 10 : 1];
    var lo = Math.min.apply(null, vs), hi = Math.max.apply(null, vs);
    if (lo === hi) { lo = log ? lo / 2 : lo - 1; hi = log ? hi * 2 : hi + 1; }
    return [lo, hi];
  }
  function scale(lo, hi, a, b, log) {
    if (log) { lo = Math.log10(lo); hi = Math.log10(hi); }
    return function (v) {
      var x = log ? Math.log10(v) : v;
      return a + (x - lo) / (hi - lo) * (b - a);
    };
  }

  function draw(svg, spec, W, H) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var m = { l: 62, r: 16, t: spec.title ? 26 : 10, b: spec.categories ? 40 : 44 };
    var cats = spec.categories, bars = spec.bars || [], lines = spec.lines || [], pts = spec.points || [];
    var xs = [], ys = [0];
    if (!cats) {
      lines.forEach(function (l) { xs = xs.concat(l.x); });
      pts.forEach(function (p) { xs.push(p.x); });
      (spec.vlines || []).forEach(function (v) { xs.push(v.x); });
      if (spec.ylog) ys = [];
    }
    bars.forEach(function (b) { ys = ys.concat(b.y); });
    lines.forEach(function (l) { ys = ys.concat(l.y); });
    pts.forEach(function (p) { ys.push(p.y); });
    (spec.hlines || []).forEach(function (h) { ys.push(h.y); });
    var xr = spec.xlim || extent(xs, spec.xlog), yr = spec.ylim || extent(ys, spec.ylog);
    if (!spec.ylim && !spec.ylog) yr = [Math.min(0, yr[0]), yr[1] * 1.05];
    var X = cats ? null : scale(xr[0], xr[1], m.l, W - m.r, spec.xlog);
    var Y = scale(yr[0], yr[1], H - m.b, m.t, spec.ylog);
    if (spec.title) text(svg, W / 2, 16, spec.title, { "text-anchor": "middle", "font-size": 13, "font-weight": "bold" });
    el("line", { x1: m.l, y1: H - m.b, x2: W - m.r, y2: H - m.b, stroke: "#444" }, svg);
    el("line", { x1: m.l, y1: m.t, x2: m.l, y2: H - m.b, stroke: "#444" }, svg);
    (spec.ylog ? logTicks(yr[0], yr[1]) : niceTicks(yr[0], yr[1], 5)).forEach(function (v) {
      el("line", { x1: m.l, x2: W - m.r, y1: Y(v), y2: Y(v), stroke: "#eee" }, svg);
      text(svg, m.l - 5, Y(v) + 4, fmt(v), { "text-anchor": "end" });
    });
    if (spec.ylabel) text(svg, 14, (m.t + H - m.b) / 2, spec.ylabel,
      { "text-anchor": "middle", transform: "rotate(-90 14 " + (m.t + H - m.b) / 2 + ")" });
    if (spec.xlabel) text(svg, (m.l + W - m.r) / 2, H - 6, spec.xlabel, { "text-anchor": "middle" });
    if (cats) {
      var bw = (W - m.l - m.r) / cats.length;
      cats.forEach(function (c, i) {
        text(svg, m.l + bw * (i + 0.5), H - m.b + 13, c, { "text-anchor": "middle", "font-family": "monospace",
          fill: (spec.category_colors && spec.category_colors[i]) || "#333" });
      });
      bars.forEach(function (b, j) {
        var color = b.color || PALETTE[j % PALETTE.length];
        b.y.forEach(function (v, i) {
          if (!isFinite(v) || v <= 0) return;
          var c = (b.colors && b.colors[i]) || color;
          el("rect", { x: m.l + bw * i + bw * 0.12, width: bw * 0.76, y: Y(v), height: Math.max(0, Y(yr[0]) - Y(v)),
            fill: b.fill === false ? "none" : c, stroke: c, "stroke-width": b.fill === false ? 1.2 : 0,
            "fill-opacity": b.opacity === undefined ? 0.85 : b.opacity }, svg).setAttribute("data-value", v);
        });
      });
    } else {
      (spec.xlog ? logTicks(xr[0], xr[1]) : niceTicks(xr[0], xr[1], 6)).forEach(function (v) {
        el("line", { x1: X(v), x2: X(v), y1: H - m.b, y2: H - m.b + 4, stroke: "#444" }, svg);
        text(svg, X(v), H - m.b + 16, fmt(v), { "text-anchor": "middle" });
      });
      (spec.vlines || []).forEach(function (v) {
        el("line", { x1: X(v.x), x2: X(v.x), y1: m.t, y2: H - m.b, stroke: v.color || "#999", "stroke-dasharray": "4 3" }, svg);
        if (v.label) text(svg, X(v.x) + 3, m.t + 10, v.label, { fill: v.color || "#666" });
      });
      lines.forEach(function (l, j) {
        var d = "", color = l.color || PALETTE[j % PALETTE.length];
        l.x.forEach(function (x, i) {
          var y = l.y[i];
          if (!isFinite(y) || (spec.ylog && y <= 0) || (spec.xlog && x <= 0)) return;
          d += (d ? "L" : "M") + X(x).toFixed(1) + "," + Y(y).toFixed(1);
        });
        el("path", { d: d, fill: "none", stroke: color, "stroke-width": l.width || 2,
          "stroke-dasharray": l.dash ? "6 4" : "none" }, svg);
      });
      pts.forEach(function (p, j) {
        var color = p.color || "#000";
        el("circle", { cx: X(p.x), cy: Y(p.y), r: p.size || 5, fill: color, stroke: "#fff" }, svg);
        if (p.label) text(svg, X(p.x) + 7, Y(p.y) - 6, p.label, { fill: color });
      });
    }
    (spec.hlines || []).forEach(function (h) {
      el("line", { x1: m.l, x2: W - m.r, y1: Y(h.y), y2: Y(h.y), stroke: h.color || "#999", "stroke-dasharray": "4 3" }, svg);
      if (h.label) text(svg, W - m.r - 4, Y(h.y) - 4, h.label, { "text-anchor": "end", fill: h.color || "#666" });
    });
    var legend = lines.concat(bars).filter(function (s) { return s.name; });
    legend.forEach(function (s, i) {
      var color = s.color || PALETTE[(lines.indexOf(s) >= 0 ? lines.indexOf(s) : bars.indexOf(s)) % PALETTE.length];
      el("rect", { x: W - m.r - 150, y: m.t + 4 + 15 * i, width: 10, height: 10, fill: color }, svg);
      text(svg, W - m.r - 135, m.t + 13 + 15 * i, s.name);
    });
  }

  function mount(root) {
    var cfg = JSON.parse(root.querySelector("script[type='application/json']").textContent);
    var svg = root.querySelector("svg"), caption = root.querySelector(".kf-caption");
    var inputs = Array.prototype.slice.call(root.querySelectorAll("input[type='range']"));
    var render = cfg.render_js ? new Function("values", "data", "KernelFree", cfg.render_js) : null;
    function update() {
      var idx = [], values = {};
      inputs.forEach(function (inp, i) {
        var s = cfg.sliders[i], k = +inp.value;
        idx.push(k);
        values[s.name] = s.values[k];
        root.querySelector(".kf-value-" + i).textContent = s.labels[k];
      });
      var spec = render ? render(values, cfg.data, window.KernelFree) : cfg.frames[idx.join(",")];
      draw(svg, spec, cfg.width, cfg.height);
      caption.textContent = spec.caption || "";
      root.setAttribute("data-state", idx.join(","));
    }
    inputs.forEach(function (inp) {
      inp.addEventListener("input", update);
      // in JupyterLab the arrow keys would otherwise also move the active cell
      inp.addEventListener("keydown", function (e) { e.stopPropagation(); });
    });
    update();
  }
  // Mount every figure on the page that has not been mounted, one by one: a figure without
  // its data (an unrun or untrusted notebook in another JupyterLab tab strips the JSON) is
  // skipped, and one that fails to draw is marked and reported without stopping the others.
  function mountAll() {
    document.querySelectorAll(".kernel-free-figure:not([data-state])").forEach(function (root) {
      if (!root.querySelector("script[type='application/json']")) return;
      try {
        mount(root);
      } catch (e) {
        root.setAttribute("data-state", "failed");
        if (window.console) console.warn("kernel-free figure " + root.id + " failed to draw:", e);
      }
    });
  }
  window.KernelFree = { draw: draw, mount: mount, mountAll: mountAll, palette: PALETTE };
})();
window.KernelFree.mountAll();
