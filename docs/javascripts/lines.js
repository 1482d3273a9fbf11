// Commands wrap by words (docs/stylesheets/extra.css). In a shell or plain-text block:
// - an indented block reaches the page as one run of text (pymdownx.highlight gives a fenced block
//   a span per line, an indented one none): each of its lines goes in a span of its own, as a
//   fenced block's, so that a long line can wrap under its own first line;
// - each run of characters between spaces goes in a span that does not break, so a line wraps at
//   its spaces only, never inside `--threads` or `runs/t73/cache` (a browser would break after a
//   hyphen or a slash).
// The text itself is unchanged: the copy button copies the same characters and newlines.
const WRAPPED = [".language-text", ".language-bash", ".language-sh", ".language-shell", ".language-console"]
  .map((language) => `.md-typeset ${language}.highlight > pre > code`)
  .join(", ");

function span(className, text) {
  return Object.assign(document.createElement("span"), { className, textContent: text });
}

function wordsOf(node) {
  // a text node as its words (spans that do not break) and the spaces between them (text)
  const parts = node.textContent.split(/(\s+)/).filter(Boolean);
  node.replaceWith(...parts.map((part) => (/^\s+$/.test(part) ? document.createTextNode(part) : span("word", part))));
}

document$.subscribe(() => {
  for (const code of document.querySelectorAll(WRAPPED)) {
    if (code.closest(".highlight").querySelector(":scope > .filename")) continue; // an example's Output: it scrolls
    if (!code.children.length) {
      code.replaceChildren(...code.textContent.split(/(?<=\n)/).map((line) => span("line", line)));
    }
    for (const line of code.children) {
      for (const node of [...line.childNodes]) if (node.nodeType === Node.TEXT_NODE) wordsOf(node);
    }
  }
});
