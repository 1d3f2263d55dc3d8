// The tokenizer fixtures are current: re-running @huggingface/tokenizers on the committed tokenizer.json
// files gives the committed ids, generate.mjs reproduces every committed file byte for byte, and the
// NFC-inert code points the C tokenizer relies on (nfc_inert in src/model/tokenizer.c) really are inert.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";

const SRC = process.env.ECO_SOURCE_DIR ?? new URL("../..", import.meta.url).pathname;
const DIR = join(SRC, "tests/fixtures/tokenizer");
const gen = await import(join(DIR, "generate.mjs"));
const STYLES = ["gpt2", "qwen2", "llama3"];
const read = (name) => readFileSync(join(DIR, name), "utf8");

for (const style of STYLES) {
  test(`${style}: HF ids on the committed tokenizer.json equal the committed cases`, () => {
    const tok = new Tokenizer(JSON.parse(read(`${style}.tokenizer.json`)), { clean_up_tokenization_spaces: false });
    const { cases, reference } = JSON.parse(read(`${style}.cases.json`));
    assert.equal(reference, gen.REFERENCE);
    assert.ok(cases.length >= 100);
    for (const c of cases) {
      assert.deepEqual(tok.encode(c.text).ids, c.ids, `ids of ${JSON.stringify(c.text)}`);
      assert.deepEqual(tok.encode(c.text, { add_special_tokens: false }).ids, c.ids_no_special, `ids_no_special of ${JSON.stringify(c.text)}`);
      if (c.ids.length) assert.equal(tok.decode(c.ids, { clean_up_tokenization_spaces: false }), c.decoded);
    }
  });
}

test("generate.mjs reproduces the committed fixtures", () => {
  const files = gen.buildFiles();
  assert.deepEqual(Object.keys(files).sort(), STYLES.flatMap((s) => [`${s}.cases.json`, `${s}.tokenizer.json`]).sort());
  let total = 0;
  for (const [name, text] of Object.entries(files)) {
    assert.equal(read(name), text, `${name} is stale: run node tests/fixtures/tokenizer/generate.mjs`);
    total += Buffer.byteLength(text);
  }
  assert.ok(total < 1 << 20, `fixtures are ${total} bytes`);
});

test("fixtures exercise what they claim", () => {
  const llama = JSON.parse(read("llama3.tokenizer.json"));
  assert.ok(Array.isArray(llama.model.merges[0]), "llama3 uses [a, b] merges");
  assert.equal(typeof JSON.parse(read("qwen2.tokenizer.json")).model.merges[0], "string");
  assert.equal(llama.pre_tokenizer.pretokenizers[0].pattern.Regex, gen.LLAMA3_PATTERN);
  // the template adds BOS; ignore_merges changes at least one result; lstrip breaks a round trip in gpt2
  const l = JSON.parse(read("llama3.cases.json")).cases;
  const bos = llama.added_tokens[0].id;
  assert.ok(l.every((c) => c.ids[0] === bos && c.ids.length === c.ids_no_special.length + 1));
  const plain = new Tokenizer({ ...llama, model: { ...llama.model, ignore_merges: false } }, {});
  assert.ok(l.some((c) => JSON.stringify(plain.encode(c.text).ids) !== JSON.stringify(c.ids)));
  assert.ok(JSON.parse(read("gpt2.cases.json")).cases.some((c) => !c.roundtrip));
  // Qwen2's single digits vs Llama-3's groups of three
  const q = JSON.parse(read("qwen2.cases.json")).cases.find((c) => c.text.startsWith("0 1 12 123"));
  const ll = l.find((c) => c.text.startsWith("0 1 12 123"));
  assert.ok(q.ids_no_special.length > ll.ids_no_special.length);
});

test("NFC-inert ranges: NFC-stable, starters, never the second half of a composition", () => {
  const second = new Set(); // code points at a non-initial position of some canonical decomposition
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const d = String.fromCodePoint(cp).normalize("NFD");
    if (d.length > 1) for (const ch of Array.from(d).slice(1)) second.add(ch.codePointAt(0));
  }
  let checked = 0;
  for (const [lo, hi] of gen.NFC_INERT_RANGES)
    for (let cp = lo; cp <= hi; cp++) {
      const s = String.fromCodePoint(cp);
      assert.equal(s.normalize("NFC"), s, `U+${cp.toString(16)} changes under NFC`);
      const first = s.normalize("NFD").codePointAt(0);
      assert.ok(!second.has(first), `U+${cp.toString(16)} can compose with what precedes it`);
      // a non-starter with class > 1 would be reordered after U+0334 (class 1); class-1 marks are not in the ranges
      assert.equal((String.fromCodePoint(first) + "\u0334").normalize("NFD").codePointAt(0), first);
      assert.ok(!(first >= 0x334 && first <= 0x338) && !(first >= 0x20d2 && first <= 0x20eb));
      checked++;
    }
  assert.ok(checked > 20000);
});
