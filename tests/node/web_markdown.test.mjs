// The site's Markdown subset (web/js/common.js markdown()), which renders docs/METHODOLOGY.md and the cite page:
// escaped pipes stay in their table cell, ordered lists keep their numbers, backslash escapes print the character,
// and nothing in a document becomes markup it did not ask for.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { markdown } from '../../web/js/common.js';

test('a table with escaped pipes has as many header cells as data cells', () => {
  const html = markdown('| fit | median \\|error\\| | MAE |\n|---|---|---|\n| a | 1.5 | 17.19 |');
  assert.equal(html, '<div class="table-wrap"><table><tr><th scope="col">fit</th><th scope="col">median |error|</th>'
    + '<th scope="col">MAE</th></tr><tr><td>a</td><td>1.5</td><td>17.19</td></tr></table></div>');
});

test('ordered lists keep their start and continuation lines; escapes and code spans are literal', () => {
  assert.equal(markdown('3. **measured**: N\\* and\n   more `a\\|b *c*`\n4. two'),
    '<ol start="3"><li><strong>measured</strong>: N* and more <code>a|b *c*</code></li><li>two</li></ol>');
  assert.equal(markdown('- one\n- two'), '<ul><li>one</li><li>two</li></ul>');
  assert.equal(markdown('<script>x</script> \\<b\\>'), '<p>&lt;script&gt;x&lt;/script&gt; &lt;b&gt;</p>');
  // an escaped backtick is a literal one and opens no span; a backslash inside a span is literal
  assert.equal(markdown('a \\` b `c\\` d'), '<p>a ` b <code>c\\</code> d</p>');
  assert.equal(markdown('\\`x\\` *y*'), '<p>`x` <em>y</em></p>');
});

test('docs/METHODOLOGY.md: every table row has its header\'s cell count, §3 is a list of five', () => {
  const html = markdown(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '../../docs/METHODOLOGY.md'), 'utf8'));
  for (const table of html.match(/<table>.*?<\/table>/g)) {
    const rows = table.match(/<tr>.*?<\/tr>/g).map((r) => (r.match(/<t[hd][ >]/g) || []).length);
    assert.ok(rows.every((n) => n === rows[0]), `${rows} in ${table.slice(0, 120)}`);
  }
  const labels = /<h3>3\. Labels[^<]*<\/h3><ol start="1">(.*?)<\/ol>/.exec(html);
  assert.ok(labels, 'the label rules render as an ordered list');
  assert.equal(labels[1].match(/<li>/g).length, 5);
});
