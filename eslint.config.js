/* ESLint for the book's own JavaScript (make test runs it after ruff): the page code in
   book/_js (the live explorers, their runtime and charts) and the DOM-free modules in
   shakespeare_lm/site/static (decoding.js, beam.js, speculative.js). ESLint's recommended
   rules, plus the project's rules of thumb (STYLE.md 14 and 19): a function fits on a screen
   (60 lines, blanks and comments not counted), and branches stay few enough to follow.
   Vendored files (book/_vendor, node_modules) are not ours and are not linted. */
"use strict";
const js = require("@eslint/js");
const globals = require("globals");

module.exports = [
  { ignores: ["book/_vendor/**", "node_modules/**", "_build/**"] },
  js.configs.recommended,
  {
    files: ["book/_js/*.js", "shakespeare_lm/site/static/*.js"],
    languageOptions: {
      ecmaVersion: 2020,
      // classic scripts in the page (one global each), require()d by node's tests
      sourceType: "script",
      globals: {
        ...globals.browser,
        ...globals.node,
        // written by `make book` (shakespeare_lm/site/book.py) and loaded before the modules
        SlmRules: "readonly",
      },
    },
    rules: {
      "max-lines-per-function": ["error", { max: 60, skipBlankLines: true, skipComments: true }],
      complexity: ["error", 15],
      "no-unused-vars": "error",
    },
  },
  {
    // decoding.js defines SlmDecoding (one global, as each module is); the modules after it read it
    files: ["shakespeare_lm/site/static/beam.js", "shakespeare_lm/site/static/speculative.js"],
    languageOptions: { globals: { SlmDecoding: "readonly" } },
  },
  {
    files: ["eslint.config.js"],
    languageOptions: { sourceType: "commonjs", globals: { ...globals.node } },
  },
];
