/* Boxes that scroll sideways are Tab stops, so that a keyboard can scroll them (WCAG 2.1.1;
   axe-core's rule scrollable-region-focusable). The theme does this for code blocks and cell
   outputs; this does it for the other boxes that scroll on a narrow screen: a long display
   formula (MathJax's mjx-container, which _config.yml otherwise keeps out of the Tab order),
   a wide table inside an output, an explorer's own scroll box. A box stops being a Tab stop
   when it fits again. Loaded on every page (book/_ext/accessible_names.py); runs when the
   page has loaded, when MathJax has typeset, when the window is resized and when the
   content changes (an explorer drew), like the theme's own. <html data-slm-scrollers> says
   "pending" while a pass is due and "marked" after it (the browser tests wait for it).

   Figure images (the chapters' matplotlib figures and the diagrams) are drawn with no text
   under 12 px at their own size (shakespeare_lm.site.style); shrunk to a phone's column that
   text would fall to 6 px. Each keeps at least LEGIBLE of its own width, so its text stays at
   10 px or more, and a box of its own (div.slm-legible) scrolls it sideways where the column
   is narrower: one of the boxes above. */
(function () {
  "use strict";
  if (window.slmScrollers) return;
  var BOXES = "#main-content mjx-container, #main-content div";
  var SAVED = "data-slm-tabindex";  // the tabindex a box had before it scrolled ("" for none)
  var IMAGES = "#main-content figure img";
  var LEGIBLE = 10 / 12;  // the smallest share of its own width a figure image is shown at

  /* Each figure image (or the link around it) in a box of its own that may scroll, the image
     no narrower than LEGIBLE of its own width. */
  function legible() {
    document.querySelectorAll(IMAGES).forEach(function (img) {
      if (!img.naturalWidth) return;  // not loaded (or broken): next pass
      img.style.minWidth = Math.ceil(img.naturalWidth * LEGIBLE) + "px";
      var inner = img.parentElement.tagName === "A" ? img.parentElement : img;
      if (inner.parentElement.classList.contains("slm-legible")) return;
      var box = document.createElement("div");
      box.className = "slm-legible";
      box.style.overflowX = "auto";
      inner.parentElement.insertBefore(box, inner);
      box.appendChild(inner);
    });
  }

  function scrolls(box) {
    if (box.scrollWidth <= box.clientWidth + 1 && box.scrollHeight <= box.clientHeight + 1) {
      return false;
    }
    var style = getComputedStyle(box);
    return /auto|scroll/.test(style.overflowX + " " + style.overflowY);
  }
  function mark() {
    legible();
    document.documentElement.setAttribute("data-slm-scrollers", "marked");
    document.querySelectorAll(BOXES).forEach(function (box) {
      var saved = box.getAttribute(SAVED);
      if (scrolls(box)) {
        if (saved === null && box.tabIndex < 0) {
          box.setAttribute(SAVED, box.getAttribute("tabindex") || "");
          box.tabIndex = 0;
        }
      } else if (saved !== null) {
        if (saved) box.setAttribute("tabindex", saved);
        else box.removeAttribute("tabindex");
        box.removeAttribute(SAVED);
      }
    });
  }
  var timer = null;
  function later() {
    document.documentElement.setAttribute("data-slm-scrollers", "pending");
    clearTimeout(timer);
    timer = setTimeout(mark, 200);
  }

  window.slmScrollers = { mark: mark };
  window.addEventListener("load", function () {
    mark();
    var mathjax = window.MathJax && window.MathJax.startup;
    if (mathjax && mathjax.promise) mathjax.promise.then(mark);
    window.addEventListener("resize", later);
    var main = document.getElementById("main-content");
    if (main) new MutationObserver(later).observe(main, { subtree: true, childList: true });
  });
})();
