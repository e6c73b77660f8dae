/* The kernel-free figures of the static site: every .slm-vega-figure on the page holds a
   Vega-Lite spec (a notebook output, see book/_ext/vega_figures.py), drawn here with the
   vendored vega-embed; its sliders are the spec's own inputs. Vega is loaded once, from
   _static/vega/ (make book copies it from npm), by a <script src>, so that the page works
   from file:// and offline. This file is also the site's one script loader: the live model
   (slm_runtime.js) and its explorers (slm_explorers.js), loaded after it, load theirs with
   slmVega.loadScript, and draw through slmVega.embed:

     slmVega.ready                      // Promise: vega, vega-lite and vega-embed are loaded
     slmVega.embed(element, spec)       // Promise of the Vega view drawn in element
     slmVega.loadScript(src)            // Promise: the script at src (a URL, or a path
                                        // under _static/) has run; each src loads once */
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
  var ready = window.vegaEmbed ? Promise.resolve() : FILES.reduce(function (chain, f) {
    return chain.then(function () { return loadScript(f, true); });
  }, Promise.resolve());

  function embed(element, spec) {
    // the spec's usermeta.embedOptions hide the link to the online editor: nothing leaves the page
    return ready.then(function () { return window.vegaEmbed(element, spec, { renderer: "svg" }); })
      .then(function (result) { return result.view; });
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
  window.slmVega = { ready: ready, embed: embed, mount: mount, mountAll: mountAll, loadScript: loadScript };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
  else mountAll();
})();
