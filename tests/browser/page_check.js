// Collects what a reader sees on the page, for tests/browser/page_check.py to judge.
() => {
  const root = document.querySelector("article.bd-article")
    || document.querySelector("main") || document.body;
  const NOT_TEXT = "pre, code, kbd, samp, tt, mjx-container, math, script, style, "
    + "noscript, textarea, select, button, .headerlink, .copybtn";
  const BLOCK = "p, li, dt, dd, td, th, caption, figcaption, .caption, h1, h2, h3, h4, "
    + "h5, h6, summary, .admonition-title, blockquote, text, tspan, label, "
    + ".widget-label";
  const MARK = { "mjx-container": "math", math: "math", pre: "code", code: "code",
                 kbd: "code", samp: "code", tt: "code" };
  const shown = (el) => el.checkVisibility({ visibilityProperty: true });
  // prose in a closed dropdown counts: the reader opens it
  const readable = (el) => shown(el)
    || !!el.closest("details:not([open]), .toggle-hidden");

  // text grouped by its nearest block element, in page order; rendered maths and code
  // in a block stand as ⟨math⟩ and ⟨code⟩, so that text either side of them stays apart
  function blocks(keep) {
    const groups = new Map();
    const add = (el, text) => {
      const block = el.closest(BLOCK) || el;
      groups.set(block, (groups.get(block) || "") + text);
    };
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    let skipped = null;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      if (!el || !node.nodeValue.trim()) continue;
      const skip = el.closest(NOT_TEXT);
      const mark = skip && MARK[skip.tagName.toLowerCase()];
      if (mark && skip !== skipped && keep(skip.parentElement)) {
        add(skip.parentElement, ` ⟨${mark}⟩ `);
      }
      if (skip) { skipped = skip; continue; }
      if (keep(el)) add(el, node.nodeValue);
    }
    return [...groups.values()].map((t) => t.replace(/\s+/g, " ").trim())
      .filter((t) => t.replace(/⟨(math|code)⟩/g, "").trim());
  }
  // a figure's caption is prose, though myst-nb puts a code cell's inside the cell
  const caption = (el) => !!el.closest("figcaption");
  const prose = blocks((el) => (!el.closest(".cell, .slm-live") || caption(el))
                               && !el.closest("svg") && readable(el));
  const richOutput = blocks((el) => !!el.closest(".cell_output, .slm-live")
                                    && !caption(el) && readable(el));
  const pasted = [...root.querySelectorAll(".pasted-text, .inline-value")]  // values
    .filter((el) => !el.closest(".cell")).map((el) => el.textContent);
  // code the prose shows: inline code and literal blocks outside the notebook cells
  const literal = [...root.querySelectorAll("code, pre")]
    .filter((el) => !el.closest(".cell") && !el.parentElement.closest("code, pre")
                    && readable(el))
    .map((el) => el.textContent);
  const code = [...root.querySelectorAll(".cell_input pre")].filter(shown)
    .map((pre) => pre.innerText.replace(/\n$/, ""));

  function describe(el) {
    const cls = [...el.classList].slice(0, 2).map((c) => "." + c).join("");
    const text = (el.textContent || "").replace(/\s+/g, " ").trim().slice(0, 60);
    return `<${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}${cls}> ${text}`;
  }
  function svgNatural(svg) {
    const w = svg.getAttribute("width"), h = svg.getAttribute("height");
    const box = svg.viewBox && svg.viewBox.baseVal;
    const abs = (v) => (v && /^[\d.]+(px)?$/.test(v.trim()) ? parseFloat(v) : null);
    const pt = (v) => (v && /^[\d.]+pt$/.test(v.trim()) ? parseFloat(v) * 4 / 3 : null);
    return [abs(w) || pt(w) || (box && box.width) || 0,
            abs(h) || pt(h) || (box && box.height) || 0];
  }
  function measure(img) {  // an image's natural size (a HiDPI one's intended width)
    const width = img.getAttribute("width") || "";
    const natural = /^\d+(\.\d+)?(px)?$/.test(width) ? parseFloat(width)
      : img.naturalWidth;
    return [natural, img.naturalHeight * natural / img.naturalWidth];
  }
  const fileOf = (img) => (img.getAttribute("src") || "").split("/").pop().slice(0, 60);
  const images = [];
  for (const img of root.querySelectorAll("img")) {
    if (!shown(img) || !img.complete || !img.naturalWidth) continue;
    const [natural, naturalHeight] = measure(img);
    images.push({ name: "img " + fileOf(img), natural, natural_height: naturalHeight,
                  shown: img.getBoundingClientRect().width });
  }
  for (const svg of root.querySelectorAll("svg")) {
    if (svg.parentElement.closest("svg") || !shown(svg)) continue;
    const [natural, naturalHeight] = svgNatural(svg);
    images.push({ name: "svg in " + describe(svg.closest("[id]") || svg.parentElement),
                  natural, natural_height: naturalHeight,
                  shown: svg.getBoundingClientRect().width });
  }

  // figures: an image, a kernel-free Vega chart (its box, drawn or not), an inline SVG or
  // a canvas; not the live explorers and widgets, which are controls with their own title
  const CONTROLS = ".slm-live, .jupyter-widgets, .widget-subarea, button, .copybtn";
  const VEGA = ".slm-vega-figure";
  function after(el) {  // the text of the element right after the box the figure ends
    let block = el;
    while (!block.nextElementSibling && block.parentElement
           && block.parentElement !== root) block = block.parentElement;
    const next = block.nextElementSibling;
    return next && next.matches("p, .caption") ? next.textContent : null;
  }
  function heading(el) {  // where to find it: the title of the section it is in
    const h = el.closest("section")?.querySelector(":scope > :is(h1, h2, h3, h4)");
    const title = h && h.textContent.replace(/[#¶]\s*$/, "").trim().slice(0, 50);
    return title ? ` in «${title}»` : "";
  }
  function drawing(el) {  // natural width and height, in CSS px
    if (el.tagName === "IMG") return measure(el);
    if (el.tagName === "svg") return svgNatural(el);
    const r = el.getBoundingClientRect();
    return el.tagName === "CANVAS" ? [el.width, el.height] : [r.width, r.height];
  }
  const figures = [];
  for (const el of root.querySelectorAll(`img, svg, canvas, ${VEGA}`)) {
    if (el.closest(CONTROLS) || !readable(el)) continue;
    if (!el.matches(VEGA) && el.parentElement.closest(`${VEGA}, svg`)) continue;
    if (el.tagName === "IMG" && !el.naturalWidth) continue;
    const [natural, naturalHeight] = drawing(el);
    const name = el.matches(VEGA) ? "Vega chart"
      : el.tagName === "IMG" ? "img " + fileOf(el) : el.tagName.toLowerCase();
    const caption = el.closest("figure")?.querySelector("figcaption");
    figures.push({ name: name + heading(el), natural,
                   natural_height: naturalHeight,
                   shown: shown(el) ? el.getBoundingClientRect().width : null,
                   caption: caption ? caption.textContent : null, after: after(el) });
  }

  function clipped(el, top) {  // inside a box below top that scrolls or clips
    for (let a = el.parentElement; a && a !== top; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== "visible") return true;
    }
    return false;
  }
  function culprits(top) {  // the outermost elements that stick out of top's box
    const box = top.getBoundingClientRect(), out = [];
    for (const el of top.querySelectorAll("*")) {
      const r = el.getBoundingClientRect();
      const ownText = [...el.childNodes]
        .some((n) => n.nodeType === 3 && n.nodeValue.trim());
      const spills = ownText && el.scrollWidth > el.clientWidth + 1  // text runs out
        && getComputedStyle(el).overflowX === "visible" ? r.left + el.scrollWidth : 0;
      const right = Math.max(r.right, spills);
      if (!r.width || (right <= box.right + 1 && r.left >= box.left - 1)) continue;
      if (clipped(el, top) || out.some((o) => o.contains(el))) continue;
      out.push(el);
    }
    return out.slice(0, 20).map(describe);
  }
  const page = document.scrollingElement || document.documentElement;
  const columns = [
    { name: "article", scroll: root.scrollWidth, client: root.clientWidth,
      culprits: root.scrollWidth > root.clientWidth + 1 ? culprits(root) : [] },
    { name: "page", scroll: page.scrollWidth, client: page.clientWidth,
      culprits: page.scrollWidth > page.clientWidth + 1 ? culprits(document.body)
        : [] },
  ];
  return { prose, rich_output: richOutput, pasted, code, literal, images, figures,
           columns, height: page.scrollHeight };
}
