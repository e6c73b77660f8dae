/* Loaded between require.js and the ipywidgets HTML manager on pages with widgets.
   1. Tell require.js where the vendored HTML manager lives, so the fonts its CSS refers to
      load from this site (by default they resolve next to the page, like a CDN path).
   2. The widget controls still typeset labels with the MathJax 2 call MathJax.Hub.Queue;
      the site runs MathJax 3, so map that call onto MathJax 3's typesetPromise. */
(function () {
  var me = document.currentScript && document.currentScript.src;
  if (me && window.require && window.require.config) {
    var base = me.substring(0, me.lastIndexOf("/") + 1);
    window.require.config({ paths: {
      "@jupyter-widgets/html-manager/dist": base + "html-manager",
      "@jupyter-widgets": base + "html-manager"   // controls, base, output: same bundle, same fonts
    } });
  }
  document.addEventListener("DOMContentLoaded", function () {
    var mj = window.MathJax;
    if (mj && !mj.Hub && mj.typesetPromise) {
      mj.Hub = { Queue: function () { return mj.startup.promise.then(function () { return mj.typesetPromise(); }); } };
    }
  });
})();
