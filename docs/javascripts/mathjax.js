// MathJax configuration for the math that pymdownx.arithmatex (generic mode) wraps in <span class="arithmatex">
// and <div class="arithmatex"> (docs/theory.md writes it with $...$ and $$...$$).  MathJax itself is loaded by
// the reader's browser (mkdocs.yml, extra_javascript): building the site needs no network.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
  },
};

// Material's instant navigation replaces the page without a reload: typeset each new page.
if (typeof document$ !== "undefined") {
  document$.subscribe(() => {
    if (window.MathJax && MathJax.typesetPromise) {
      MathJax.startup.output.clearCache();
      MathJax.typesetClear();
      MathJax.texReset();
      MathJax.typesetPromise();
    }
  });
}
